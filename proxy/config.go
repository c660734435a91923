package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
)

// Gate is the egress gate the proxy consults. *egress.Gate satisfies it.
type Gate interface {
	// CheckHost normalises host (a name or an IP literal in any spelling)
	// and decides on it statically; a malformed host is denied. For a
	// name, Allow means the name may be resolved, and the addresses must
	// then be checked with CheckResolved.
	CheckHost(task, host string, port uint16) (decision.Decision, egress.Target)
	// CheckHostPort is CheckHost for "host", "host:port" or "[v6]:port",
	// with defaultPort when no port is given (0: none).
	CheckHostPort(task, hostport string, defaultPort uint16) (decision.Decision, egress.Target)
	// CheckResolved decides on a name after one resolution and returns
	// the addresses that may be dialled.
	CheckResolved(task string, t egress.Target, addrs []netip.Addr) (decision.Decision, []netip.Addr)
	// Entry returns the options of task's allowlist entry (the Rule of an
	// allow): inspection and rules, the protocol a tunnel carries; nil
	// for an opaque entry.
	Entry(task, entry string) *egress.Entry
	// Credential names the credential to add to a request, "" for none.
	Credential(task string, t egress.Target, q *egress.Request) string
	// Credentials names the credentials for task's requests to a
	// destination, whatever their method and path.
	Credentials(task string, t egress.Target) []string
	// CredentialHost is the host a credential is for, for reasons.
	CredentialHost(name string) string
}

var _ Gate = (*egress.Gate)(nil)

// Resolver looks up the addresses of a host name. *net.Resolver
// satisfies it. The proxy asks for the name it decided, fully qualified:
// with a trailing dot ("pypi.org."), so that no search domain is appended
// to it and ndots plays no part (docs/egress.md).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens upstream connections. *net.Dialer satisfies it. The proxy
// only ever passes it an IP address and port ("203.0.113.7:443"), never a
// name.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// DialerFunc adapts a function to the Dialer interface.
type DialerFunc func(ctx context.Context, network, address string) (net.Conn, error)

// DialContext calls f.
func (f DialerFunc) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return f(ctx, network, address)
}

// Config configures a Proxy.
type Config struct {
	// Task names the allowlist every request is decided against.
	Task string
	// Gate decides every request. Required.
	Gate Gate
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dialer dials checked addresses; nil means a net.Dialer.
	Dialer Dialer
	// OnEvent, when not nil, is called synchronously for every decision
	// (before any upstream connection is made, so an audit record can be
	// durable before the action it allows) and again when an allowed
	// connection ends. It must be safe for concurrent use.
	OnEvent func(Event)
	// Record, when not nil, is called like OnEvent, after it. When it
	// fails to record an allowed decision, the proxy refuses the request
	// (HTTP 503, SOCKS5 reply 1) rather than act on a decision the audit
	// log does not hold. Its errors for other events are ignored.
	Record func(Event) error
	// Limits bound the proxy's resources; zero fields take defaults.
	Limits Limits
	// CA signs the certificates of inspected tunnels. Without it an
	// inspected entry's tunnels are refused (fail closed).
	CA *CA
	// UpstreamRoots verify the destinations of inspected and forwarded
	// HTTPS whose entry names no CA; nil means the host's roots.
	UpstreamRoots *x509.CertPool
	// Credentials are the values of the gate's credentials, by name.
	Credentials []Credential
	// Budgets cap the traffic of the proxy's life (a session's) or, when
	// PerStep, of each step (ResetStep starts the next).
	Budgets []Budget
	// Metrics, when not nil, counts the proxy's decisions, bytes,
	// connections and latencies (docs/egress.md, "Metrics").
	Metrics *Metrics
}

// Credential is the value of one of the gate's credentials: the header
// the proxy sets on the requests the gate says it is for.
type Credential struct {
	// Name is the credential's name in the gate.
	Name string
	// Header is the header set ("Authorization").
	Header string
	// Value is the header's whole value ("Bearer ..."); it never reaches
	// the sandbox, the events or a reason.
	Value string
	// Placeholder is what the sandbox may hold in the value's place; a
	// request carrying it anywhere the credential is not for is refused.
	Placeholder string
}

// Budget caps traffic through the proxy, for all destinations and per
// host; reaching a cap refuses new requests and ends open tunnels
// (docs/egress.md, "Budgets").
type Budget struct {
	// Name names the budget in reasons ("task fetch", "session").
	Name string
	// PerStep makes ResetStep start the budget over.
	PerStep bool
	// All caps the traffic to every destination together.
	All BudgetLimits
	// Hosts caps the traffic to single hosts (egress.Target.Host()).
	Hosts map[string]BudgetLimits
}

// BudgetLimits are the caps of a budget; 0 is no cap.
type BudgetLimits struct {
	// BytesOut and BytesIn cap bytes to and from destinations: every byte
	// of a tunnel, the bodies of HTTP requests and responses.
	BytesOut, BytesIn int64
	// Requests caps the requests decided: absolute-form HTTP requests,
	// requests inside inspected tunnels, and opaque tunnels.
	Requests int64
	// Connections and Concurrent cap upstream connections in all and at
	// once.
	Connections, Concurrent int64
}

// Limits bound what one proxy may hold open and how long it waits. Each
// count is shared fairly: a client (a source address; an IPv6 one by its
// /64) may hold at most its per-client part, so that one client holding
// all it may leaves the rest to the others (docs/egress.md, "Bounds").
type Limits struct {
	// MaxConns is the most client connections held at once, whatever
	// their state (sending a request, being decided, tunnelling, idle
	// between requests); a connection past it, or past its client's part,
	// is closed as soon as it is accepted, and counted in the audit
	// stream. Default 4096.
	MaxConns int
	// MaxConnsPerClient is one client's part of MaxConns. Default a
	// quarter of MaxConns.
	MaxConnsPerClient int
	// MaxTunnels is the most upstream connections (tunnels and forwarded
	// requests) open at once; more are refused. Default 1024.
	MaxTunnels int
	// MaxTunnelsPerClient is one client's part of MaxTunnels. Default a
	// quarter of MaxTunnels.
	MaxTunnelsPerClient int
	// MaxHeaderBytes caps the size of an HTTP request's header. Default
	// 64 KiB.
	MaxHeaderBytes int
	// HandshakeTimeout cuts off a client that has not finished sending
	// its request (HTTP header or SOCKS5 greeting and request). Default 10s.
	HandshakeTimeout time.Duration
	// IdleTimeout cuts off a tunnel or forwarded request with no data in
	// either direction for this long, and an idle HTTP keep-alive
	// connection. Default 5 minutes.
	IdleTimeout time.Duration
	// DialTimeout bounds resolving a name and connecting to it. Default 10s.
	DialTimeout time.Duration
}

// The default limits.
const (
	DefaultMaxConns         = 4096
	DefaultMaxTunnels       = 1024
	DefaultMaxHeaderBytes   = 64 << 10
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultDialTimeout      = 10 * time.Second
)

// withDefaults fills in zero limits and rejects negative ones.
func (l Limits) withDefaults() (Limits, error) {
	if l.MaxConns < 0 || l.MaxConnsPerClient < 0 || l.MaxTunnels < 0 || l.MaxTunnelsPerClient < 0 ||
		l.MaxHeaderBytes < 0 || l.HandshakeTimeout < 0 || l.IdleTimeout < 0 || l.DialTimeout < 0 {
		return l, errors.New("proxy: limits must not be negative")
	}
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerClient == 0 {
		l.MaxConnsPerClient = max(l.MaxConns/4, 1)
	}
	if l.MaxTunnels == 0 {
		l.MaxTunnels = DefaultMaxTunnels
	}
	if l.MaxTunnelsPerClient == 0 {
		l.MaxTunnelsPerClient = max(l.MaxTunnels/4, 1)
	}
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.HandshakeTimeout == 0 {
		l.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.DialTimeout == 0 {
		l.DialTimeout = DefaultDialTimeout
	}
	return l, nil
}

// SandboxMaxConns bounds the connections one sandbox may hold open to its
// proxy, whatever its caps allow.
const SandboxMaxConns = 256

// SandboxLimits are the limits of a proxy that serves one sandbox, whose
// processes may each open openFiles files (the run's openFiles cap): it
// holds at most min(openFiles, SandboxMaxConns) connections from the
// sandbox and as many upstream, each costing airlock's own process at most
// six descriptors (the two sockets, and a splice pipe for each direction
// of a tunnel), however the sandbox behaves. A sandbox is one client (its
// connections all come from its loopback), so the per-client parts are
// the whole.
func SandboxLimits(openFiles int) Limits {
	n := min(max(openFiles, 1), SandboxMaxConns)
	return Limits{MaxConns: n, MaxConnsPerClient: n, MaxTunnels: n, MaxTunnelsPerClient: n}
}
