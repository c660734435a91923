package selftest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/proxy"
)

// envToken is set in every run's environment to the battery's token, so
// that the residue check finds any process of a run, whatever its name.
const envToken = "AIRLOCK_SELFTEST"

// fixtures are what the battery sets up on the host: a private temporary
// tree, canary secrets, a loopback upstream for the proxy's baseline, the
// resolver the proxy uses, and the canary listeners the attempts aim at.
type fixtures struct {
	// token is this battery's random name: in every file, run id, cgroup
	// and process it leaves, so the residue check can find them.
	token string
	// root (under the temporary directory) and varRoot (under /var/tmp)
	// hold everything the battery writes on the host; both 0755.
	root, varRoot string
	// secret is the canary secrets' content; secretTmp and secretVar are
	// two host files holding it, outside everything the sandbox binds.
	secret, secretTmp, secretVar string
	// upstream is a loopback HTTP server the baseline reaches through the
	// proxy; it answers with the token.
	upstream string
	resolver *staticResolver

	mu      sync.Mutex
	closers []func()
	seq     atomic.Int64
}

// Names the battery's resolver answers, and what with. Nothing else
// resolves: the proxy never asks a real DNS server.
const (
	nameUpstream   = "upstream.selftest.example"
	nameMetadata4  = "metadata-alias.selftest.example"
	nameMetadata6  = "metadata6-alias.selftest.example"
	nameLoopback   = "loopback-alias.selftest.example"
	nameLoopbackEx = "loopback-exact.selftest.example"
	namePrivate    = "private-alias.selftest.example"
	tokenPrefix    = "airlock-selftest-"
	upstreamHeader = "X-Airlock-Selftest"
)

func newFixtures() (fx *fixtures, err error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("selftest: random token: %w", err)
	}
	fx = &fixtures{token: tokenPrefix + hex.EncodeToString(b[:])}
	defer func() {
		if err != nil {
			fx.close()
		}
	}()
	fx.secret = "airlock-selftest canary secret " + fx.token
	if fx.root, err = privateDir(os.TempDir(), fx.token); err != nil {
		return nil, err
	}
	fx.defer_(func() { os.RemoveAll(fx.root) })
	if fx.varRoot, err = privateDir("/var/tmp", fx.token); err != nil {
		// Some hosts have no /var/tmp: the second canary lives beside
		// the first then.
		fx.varRoot = filepath.Join(fx.root, "var")
		if err = os.Mkdir(fx.varRoot, 0o755); err != nil {
			return nil, fmt.Errorf("selftest: %w", err)
		}
	} else {
		fx.defer_(func() { os.RemoveAll(fx.varRoot) })
	}
	fx.secretTmp = filepath.Join(fx.root, "secret", "credentials")
	fx.secretVar = filepath.Join(fx.varRoot, "credentials")
	for _, p := range []string{fx.secretTmp, fx.secretVar} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("selftest: %w", err)
		}
		if err := os.WriteFile(p, []byte(fx.secret+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("selftest: plant a canary secret: %w", err)
		}
	}
	lo4 := netip.MustParseAddr("127.0.0.1")
	fx.resolver = &staticResolver{names: map[string][]netip.Addr{
		// No name reaches the host's loopback (docs/egress.md): the
		// upstream's name resolves to its stand-in, which the guard
		// dials at loopback.
		nameUpstream:   {standIn},
		nameLoopbackEx: {lo4},
		nameMetadata4:  {netip.MustParseAddr("169.254.169.254")},
		nameMetadata6:  {netip.MustParseAddr("fd00:ec2::254")},
		nameLoopback:   {lo4},
		namePrivate:    {netip.MustParseAddr("10.0.0.1")},
	}}
	if err := fx.startUpstream(); err != nil {
		return nil, err
	}
	return fx, nil
}

// privateDir makes dir/name, world-readable so that a sandbox run by an
// unprivileged user can be given paths under it.
func privateDir(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		return "", fmt.Errorf("selftest: %w", err)
	}
	if err := os.Chmod(p, 0o755); err != nil {
		os.Remove(p)
		return "", fmt.Errorf("selftest: %w", err)
	}
	return p, nil
}

// defer_ registers f to run when the fixtures close, last first.
func (fx *fixtures) defer_(f func()) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.closers = append(fx.closers, f)
}

// close undoes everything the fixtures made.
func (fx *fixtures) close() {
	fx.mu.Lock()
	cl := fx.closers
	fx.closers = nil
	fx.mu.Unlock()
	for i := len(cl) - 1; i >= 0; i-- {
		cl[i]()
	}
}

// startUpstream serves the baseline's upstream on loopback.
func (fx *fixtures) startUpstream() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("selftest: upstream: %w", err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(upstreamHeader, fx.token)
		io.WriteString(w, fx.token+"\n")
	})}
	go srv.Serve(ln)
	fx.defer_(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	fx.upstream = net.JoinHostPort(nameUpstream, port)
	return nil
}

// dir makes a fresh directory under root for one attempt.
func (fx *fixtures) dir(kind string) (string, error) {
	p := filepath.Join(fx.root, fmt.Sprintf("%s-%d", kind, fx.seq.Add(1)))
	if err := os.Mkdir(p, 0o755); err != nil {
		return "", fmt.Errorf("selftest: %w", err)
	}
	return p, nil
}

// canary is a host listener an attempt aims at from inside the sandbox:
// anything it receives came through a hole.
type canary struct {
	addr string
	hits atomic.Int64
	stop func()
}

// seen says what the canary received, for evidence.
func (c *canary) seen() string {
	if n := c.hits.Load(); n > 0 {
		return fmt.Sprintf("the host's canary %s received %d connections or datagrams", c.addr, n)
	}
	return "the host's canary " + c.addr + " received nothing"
}

// streamCanary listens for TCP ("tcp4", "tcp6") or unix connections on
// the host. For "unix", addr is a path or "@name" (abstract).
func (fx *fixtures) streamCanary(network, addr string) (*canary, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	c := &canary{addr: ln.Addr().String()}
	if network == "unix" {
		c.addr = addr
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.hits.Add(1)
			io.WriteString(conn, "airlock selftest canary: you are outside the sandbox\n")
			conn.Close()
		}
	}()
	c.stop = func() { ln.Close() }
	return c, nil
}

// packetCanary listens for datagrams on the host ("udp4", "udp6").
func (fx *fixtures) packetCanary(network, addr string) (*canary, error) {
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		return nil, err
	}
	c := &canary{addr: pc.LocalAddr().String()}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			c.hits.Add(1)
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
	c.stop = func() { pc.Close() }
	return c, nil
}

// staticResolver is the proxy's resolver in the battery: a fixed table,
// so that "rebinding" answers are under the battery's control and no
// lookup ever leaves the host.
type staticResolver struct {
	names map[string][]netip.Addr
}

var errNoSuchHost = errors.New("selftest resolver: no such host (the battery resolves only its own names)")

// LookupNetIP answers from the table; network is "ip", "ip4" or "ip6".
func (r *staticResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	addrs, ok := r.names[strings.TrimSuffix(strings.ToLower(host), ".")]
	if !ok {
		return nil, &net.DNSError{Err: errNoSuchHost.Error(), Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		if network == "ip" || (network == "ip4") == a.Is4() {
			out = append(out, a)
		}
	}
	return out, nil
}

// guard is the proxy's upstream dialer in the battery: it dials loopback
// only, and records (and refuses) every other address it is handed.
type guard struct {
	mu      sync.Mutex
	refused []string
	d       net.Dialer
}

var _ proxy.Dialer = (*guard)(nil)

// standIn is the address the battery's resolver gives the upstream's
// name: one of the benchmarking range (not public, so an allowlisted
// name reaches it, and never an address of the host), which the guard
// dials at the upstream's loopback address.
var standIn = netip.MustParseAddr("198.18.0.1")

// DialContext dials addr if it is a loopback address or the stand-in
// (dialled at 127.0.0.1).
func (g *guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err == nil && ap.Addr() == standIn {
		ap = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port())
		addr = ap.String()
	}
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		g.mu.Lock()
		g.refused = append(g.refused, addr)
		g.mu.Unlock()
		return nil, fmt.Errorf("selftest guard: refusing to dial %s: the battery dials loopback only", addr)
	}
	return g.d.DialContext(ctx, network, addr)
}

func (g *guard) dials() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.refused...)
}
