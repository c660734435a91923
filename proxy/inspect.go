package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
)

// inspection is one inspected tunnel: the proxy terminates the client's
// TLS (or reads its plain HTTP), serves its requests with the inspection
// server, decides each by the entry's rules and forwards the allowed ones
// to the destination the gate allowed, over connections of the tunnel's
// own (no connection is shared with another tunnel).
type inspection struct {
	p      *Proxy
	ev     *Event // the tunnel's: decided, and finished by the caller of tunnel
	entry  *egress.Entry
	secure bool      // the client spoke TLS, and so does the upstream
	redact *redactor // of the credentials for the tunnel's host: its answers pass it
	tr     *http.Transport
	rp     *httputil.ReverseProxy

	mu    sync.Mutex
	first net.Conn // the connection dialled for the decision, taken by the first dial

	up, down atomic.Int64 // body bytes of the requests
	done     chan struct{}
	once     sync.Once
}

// inspKey carries a request's inspection in its context.
type inspKey struct{}

// inspect serves an inspected tunnel until the client's connection ends:
// its first bytes must be TLS naming the tunnel's host, or plain HTTP.
func (p *Proxy) inspect(ev *Event, client net.Conn, buffered []byte, up net.Conn) error {
	if p.ca == nil { // open refuses it first; fail closed all the same
		return fmt.Errorf(reasonNoCA, ev.Target)
	}
	_ = client.SetReadDeadline(time.Now().Add(p.limits.HandshakeTimeout))
	f, err := sniff(client, buffered)
	_ = client.SetReadDeadline(time.Time{})
	var reason string
	switch {
	case err != nil && f.kind == firstTLS:
		reason = fmt.Sprintf(reasonBadHello, ev.Target, err)
	case err != nil && len(f.data) == 0:
		return ignoreClosed(err) // the client left without a word
	case f.kind == firstOther:
		reason = fmt.Sprintf(reasonInspected, ev.Target)
	default:
		reason = consistent(ev.entry, ev.Target, f)
	}
	if reason != "" {
		p.refused(ev, reason)
		refuseTunnel(client, f.kind, reason)
		return errTunnelRefused
	}
	ins, err := p.newInspection(ev, up, f.kind == firstTLS)
	if err != nil {
		p.refused(ev, fmt.Sprintf("tunnel to %s refused: %v", ev.Target, err))
		refuseTunnel(client, f.kind, err.Error())
		return err
	}
	defer ins.tr.CloseIdleConnections()
	// A budget reached refuses the tunnel's further requests one by one
	// (429): the tunnel itself is not cut, so that they can be answered.
	base := &hookConn{Conn: client, onClose: ins.end}
	var conn net.Conn = &prefixConn{Conn: base, prefix: f.data}
	if ins.secure {
		cert, err := p.ca.leaf(ev.Target.Host())
		if err != nil {
			return err
		}
		conn = tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
	}
	p.inspections.Store(conn, ins)
	defer p.inspections.Delete(conn)
	p.startServer(&p.inspecting, p.is, p.iln)
	if !p.iln.push(conn) {
		conn.Close()
		return ErrClosed
	}
	select {
	case <-ins.done:
	case <-p.ctx.Done(): // Close: its connections are being cut
		conn.Close()
	}
	ev.BytesUp, ev.BytesDown = ins.up.Load(), ins.down.Load()
	return nil
}

// newInspection builds the transport of an inspected tunnel: its first
// connection is up, dialled for the decision; more go to the addresses
// the gate checked. Upstream TLS is verified against the entry's CA, or
// the host's roots.
func (p *Proxy) newInspection(ev *Event, up net.Conn, secure bool) (*inspection, error) {
	ins := &inspection{p: p, ev: ev, entry: ev.entry, secure: secure, redact: p.answerRedactor(ev.Target), first: up, done: make(chan struct{})}
	roots := p.upstreamRoots
	if path := ev.entry.UpstreamCA(); path != "" {
		var err error
		if roots, err = p.upstreamPool(path); err != nil {
			return nil, err
		}
	}
	ins.tr = &http.Transport{
		DialContext:         ins.dial,
		TLSClientConfig:     &tls.Config{ServerName: ev.Target.Host(), RootCAs: roots, MinVersion: tls.VersionTLS12, ClientSessionCache: p.sessions},
		ForceAttemptHTTP2:   true,
		MaxConnsPerHost:     maxInspectedConns,
		MaxIdleConnsPerHost: maxInspectedConns,
		IdleConnTimeout:     p.limits.IdleTimeout,
		TLSHandshakeTimeout: p.limits.DialTimeout,
		DisableCompression:  true,
	}
	scheme := "http"
	if secure {
		scheme = "https"
	}
	authority := ev.Target.String()
	ins.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = scheme, authority
			pr.Out.Host = pr.In.Host
		},
		Transport: ins.tr,
		// Buffered as the server's writer buffers; a streamed response
		// (no length, or text/event-stream) is flushed at once anyway.
		FlushInterval:  0,
		ErrorLog:       log.New(io.Discard, "", 0),
		ErrorHandler:   p.forwardError,
		ModifyResponse: p.scrubResponse,
	}
	return ins, nil
}

// maxInspectedConns bounds the upstream connections of one inspected
// tunnel (an HTTP/2 client may send many requests at once).
const maxInspectedConns = 4

// upstreamPool reads an entry's CA file: the roots its destination's
// certificate must chain to.
func (p *Proxy) upstreamPool(path string) (*x509.CertPool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pool := p.pools[path]; pool != nil {
		return pool, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the entry's upstream CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("the entry's upstream CA %s holds no PEM certificate", path)
	}
	p.pools[path] = pool
	return pool, nil
}

// dial is the transport's dialer: the decision's connection first, then
// new ones to the checked addresses, each holding a tunnel slot and a
// place in the budgets.
func (ins *inspection) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	ins.mu.Lock()
	c := ins.first
	ins.first = nil
	ins.mu.Unlock()
	if c != nil {
		return c, nil
	}
	p, ev := ins.p, ins.ev
	sl, err := p.tunnelShare.slot(ev.client)
	if err != nil {
		return nil, err
	}
	use, err := p.budget.admit(ev.Target.Host(), false, true)
	if err != nil {
		sl.release()
		return nil, err
	}
	c, _, err = p.dial(ctx, ev.addrs, ev.Target.Port)
	if err != nil {
		sl.release()
		use.done()
		return nil, err
	}
	return &hookConn{Conn: c, onClose: func() { sl.release(); use.done() }}, nil
}

// end marks the inspection over: its client connection has closed.
func (ins *inspection) end() { ins.once.Do(func() { close(ins.done) }) }

// newInspectionServer is the server of inspected tunnels' requests, over
// TLS (HTTP/2 or HTTP/1.1, as the client's ALPN chooses) or plain HTTP.
func (p *Proxy) newInspectionServer() *http.Server {
	s := p.newServer(p.serveInspected, func(ctx context.Context, c net.Conn) context.Context {
		if ins, ok := p.inspections.Load(c); ok {
			return context.WithValue(ctx, inspKey{}, ins)
		}
		return ctx
	})
	s.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 32}
	return s
}

// serveInspected decides one request of an inspected tunnel and forwards
// it when it is allowed: the host it names must be the tunnel's, the
// entry's rules must allow it, a placeholder it carries must be for it,
// and the budgets must have room; the decision is recorded before it is
// forwarded. A refusal is 403 (429 for a budget) with X-Airlock-Reason.
func (p *Proxy) serveInspected(w http.ResponseWriter, r *http.Request) {
	ins, _ := r.Context().Value(inspKey{}).(*inspection)
	if ins == nil {
		writeReason(w, http.StatusInternalServerError, "the proxy lost this tunnel's inspection", true)
		return
	}
	t := ins.ev.Target
	ev := p.newEvent(ProtocolInspected, ins.ev.Client, ins.ev.Requested)
	ev.Target, ev.Entry, ev.Dialled = t, ins.ev.Decision.Rule, ins.ev.Dialled
	q := requestOf(t, r)
	ev.Method, ev.Path = r.Method, clip(r.URL.RequestURI())
	if why := hostMismatch(t, r.Host); why != "" {
		ev.Decision = deny("%s", why)
	} else {
		ev.Decision = ins.entry.CheckRequest(q)
	}
	cred := p.admitRequest(&ev, ins.entry, q, r, ins.secure)
	if !p.answered(w, &ev) {
		return
	}
	rt := &route{addrs: ins.ev.addrs, port: t.Port, redact: ins.redact}
	if cred != nil {
		putCredential(r, cred)
	}
	up, down := p.forward(w, r, &ev, ins.rp, rt)
	ins.up.Add(up)
	ins.down.Add(down)
}

// admitRequest completes the decision on a request the proxy read, once
// its entry allowed it: the credential it gets (a placeholder where its
// credential is not for it is refused), and its place in the budgets.
func (p *Proxy) admitRequest(ev *Event, entry *egress.Entry, q *egress.Request, r *http.Request, secure bool) *Credential {
	if !ev.Decision.Allowed() {
		return nil
	}
	cred, why := p.credentialFor(ev.Target, entry, q, r, secure)
	if why == "" && cred != nil {
		why = twinHeader(ev.Target, r.Header, cred)
	}
	if why != "" {
		ev.Decision = deny("%s", why)
		return nil
	}
	use, err := p.budget.admit(ev.Target.Host(), true, false)
	var be *budgetError
	if errors.As(err, &be) {
		ev.Decision, ev.Budget = deny("%s", be.reason), be.budget
		return nil
	}
	ev.use = use
	if cred != nil {
		ev.Credential = cred.Name
	}
	return cred
}

// twinHeader refuses a request that carries, besides the header the
// proxy sets for cred, one that servers read as that header (a CGI or
// WSGI server reads X_Api_Key as X-Api-Key): the proxy replaces the
// header, and would leave its twin beside it.
func twinHeader(t egress.Target, h http.Header, cred *Credential) string {
	want := egress.FoldHeaderName(cred.Header)
	for k := range h {
		if k != http.CanonicalHeaderKey(cred.Header) && egress.FoldHeaderName(k) == want {
			return fmt.Sprintf("request to %s refused: credential %q sets %s, and the request carries %+q, which servers read as the same header", t, cred.Name, cred.Header, clip(k))
		}
	}
	return ""
}

// answered records the decision on a request the proxy read and answers
// a refusal; it reports whether the request may go ahead.
func (p *Proxy) answered(w http.ResponseWriter, ev *Event) bool {
	if err := p.decided(ev); err != nil {
		failHTTP(w, err, false)
		p.finish(ev, err) // as a forwarded request's: its end is reported
		return false
	}
	if !ev.Decision.Allowed() {
		writeReason(w, refusalStatus(ev), ev.Decision.Why(), false)
		return false
	}
	return true
}

// refusalStatus is the HTTP status of a refusal: 429 when a budget
// refused, else 403.
func refusalStatus(ev *Event) int {
	if ev.Budget != "" {
		return http.StatusTooManyRequests
	}
	return http.StatusForbidden
}

// requestOf is r in the egress gate's terms, as it will be forwarded: it
// first removes from r the headers the forwarder would not send (so that
// no header is decided on that the destination does not see), and its
// path is the request target the forwarder writes (url.URL.RequestURI,
// also for a target that is not a path: a URL's opaque part, "*").
func requestOf(t egress.Target, r *http.Request) *egress.Request {
	up := egress.ForwardHeader(r.Header)
	path, query, _ := strings.Cut(r.URL.RequestURI(), "?")
	return &egress.Request{Host: t.String(), Method: r.Method, Path: path, RawQuery: query, Header: r.Header, Upgrade: up}
}

// clip bounds a string an event keeps.
func clip(s string) string {
	if len(s) > maxRequestedBytes {
		return s[:maxRequestedBytes]
	}
	return s
}

// hookConn calls onClose once, when it is first closed.
type hookConn struct {
	net.Conn
	onClose func()
	once    sync.Once
}

func (c *hookConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.onClose)
	return err
}

// CloseWrite half-closes the wrapped connection when it can.
func (c *hookConn) CloseWrite() error { return closeWrite(c.Conn) }
