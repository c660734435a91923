package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// reasonScheme refuses absolute-form URLs the proxy does not forward.
const reasonScheme = "egress to %q refused: scheme %q is not supported (http and https only)"

// routeKey carries a forwarded request's route in its context.
type routeKey struct{}

// route is where one forwarded request may go: the addresses the gate
// checked. The transport's dialer reads it, so a forwarded request is
// dialled exactly like a tunnel: to a checked address, never a name.
type route struct {
	addrs  []netip.Addr
	port   uint16
	host   string      // the destination as the gate normalised it, for budgets and TLS
	tls    *tls.Config // verifies the destination of an https URL; nil: default
	redact *redactor   // of the credentials for the destination: its answer passes it

	mu      sync.Mutex
	dialled netip.AddrPort
	err     error
}

func (rt *route) setDialled(ap netip.AddrPort) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.dialled = ap
}

func (rt *route) setErr(err error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.err = err
}

func (rt *route) result() (netip.AddrPort, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.dialled, rt.err
}

// newTransport builds the transport of forwarded requests. Every request
// gets its own upstream connection (no pooling, so no connection is ever
// shared between two decisions); it never consults proxy environment
// variables and never compresses on the client's behalf.
func (p *Proxy) newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         p.dialRoute,
		DialTLSContext:      p.dialRouteTLS,
		DisableKeepAlives:   true,
		DisableCompression:  true,
		TLSHandshakeTimeout: p.limits.DialTimeout,
	}
}

// newForwarder builds the forwarder of absolute-form requests. The
// standard reverse proxy removes the hop-by-hop headers (Connection and
// the headers it names, Proxy-Connection, Proxy-Authorization,
// Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade) and handles
// bodies, trailers and protocol upgrades.
func (p *Proxy) newForwarder() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		// The absolute URL is already the destination; Rewrite also drops
		// client-sent X-Forwarded-* headers.
		Rewrite:        func(*httputil.ProxyRequest) {},
		Transport:      p.tr,
		FlushInterval:  -1,
		ErrorLog:       log.New(io.Discard, "", 0),
		ErrorHandler:   p.forwardError,
		ModifyResponse: p.scrubResponse,
	}
}

// dialRoute is the transport's dialer: it dials the request's checked
// addresses and fails closed when a request carries none. Each
// connection takes its place in the budgets.
func (p *Proxy) dialRoute(ctx context.Context, _, _ string) (net.Conn, error) {
	rt, _ := ctx.Value(routeKey{}).(*route)
	if rt == nil {
		return nil, errors.New("no checked address for this request")
	}
	use, err := p.budget.admit(rt.host, false, true)
	if err != nil {
		return nil, err
	}
	c, ap, err := p.dial(ctx, rt.addrs, rt.port)
	if err != nil {
		use.done()
		return nil, err
	}
	rt.setDialled(ap)
	return &idleConn{Conn: c, timeout: p.limits.IdleTimeout, use: use}, nil
}

// dialRouteTLS dials an https URL's destination and verifies it: against
// its entry's CA when it names one, else the proxy's upstream roots.
func (p *Proxy) dialRouteTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := p.dialRoute(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	rt, _ := ctx.Value(routeKey{}).(*route)
	cfg := rt.tls
	if cfg == nil {
		cfg = &tls.Config{ServerName: rt.host, RootCAs: p.upstreamRoots, MinVersion: tls.VersionTLS12}
	}
	tc := tls.Client(c, cfg)
	hctx, cancel := context.WithTimeout(ctx, p.limits.DialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

// forwardError answers a forwarded request whose upstream failed.
func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	var be *budgetError
	if rt, ok := r.Context().Value(routeKey{}).(*route); ok {
		switch {
		case errors.As(err, &be), errors.Is(err, errBudgetBytes), r.Context().Err() != nil:
			rt.setErr(err) // the proxy's own refusal, or the client gone
		default:
			rt.setErr(&upstreamError{err})
		}
	}
	switch {
	case errors.As(err, &be):
		writeReason(w, http.StatusTooManyRequests, p.scrub(be.reason), false)
		return
	case errors.Is(err, errBudgetBytes):
		writeReason(w, http.StatusTooManyRequests, "the request passed a byte budget: "+err.Error(), false)
		return
	}
	writeReason(w, failStatus(err), p.scrub(reasonFailed+err.Error()), false)
}

// serveForward serves an absolute-form request: decide, then forward it
// to a checked address. An inspected entry's rules decide the request,
// as inside an inspected tunnel.
func (p *Proxy) serveForward(w http.ResponseWriter, r *http.Request) {
	host, _ := requestHost(r) // as the client sent it, not percent-decoded
	ev := p.newEvent(ProtocolHTTP, r.RemoteAddr, host)
	var defaultPort uint16
	switch r.URL.Scheme {
	case "http":
		defaultPort = 80
	case "https":
		defaultPort = 443
	default:
		ev.Decision = deny(reasonScheme, r.URL.Host, r.URL.Scheme)
		_ = p.emit(ev)
		writeReason(w, http.StatusForbidden, ev.Decision.Why(), false)
		return
	}
	if r.URL.User != nil {
		ev.Decision = deny(reasonUserinfo, r.URL.Host)
		_ = p.emit(ev)
		writeReason(w, http.StatusForbidden, ev.Decision.Why(), false)
		return
	}
	ev.Decision, ev.Target = p.gate.CheckHostPort(p.task, host, defaultPort)
	addrs, err := p.decide(r.Context(), &ev)
	var cred *Credential
	rt := &route{addrs: addrs, port: ev.Target.Port, host: ev.Target.Host(), redact: p.answerRedactor(ev.Target)}
	if ev.Decision.Allowed() && err == nil {
		q := requestOf(ev.Target, r)
		ev.Method, ev.Path = r.Method, clip(r.URL.RequestURI())
		ev.entry = p.gate.Entry(p.task, ev.Decision.Rule)
		if ev.entry.Inspected() {
			ev.Entry, ev.Decision = ev.Decision.Rule, ev.entry.CheckRequest(q)
			if path := ev.entry.UpstreamCA(); path != "" && ev.Decision.Allowed() {
				pool, perr := p.upstreamPool(path)
				err = perr
				rt.tls = &tls.Config{ServerName: rt.host, RootCAs: pool, MinVersion: tls.VersionTLS12}
			}
		}
		cred = p.admitRequest(&ev, ev.entry, q, r, r.URL.Scheme == "https")
	}
	if rerr := p.decided(&ev); rerr != nil {
		err = rerr
	} else if !ev.Decision.Allowed() {
		writeReason(w, refusalStatus(&ev), ev.Decision.Why(), false)
		return
	}
	if err == nil {
		ev.tunnel, err = p.tunnelShare.slot(ev.client) // released by finish, in forward
	}
	if err != nil {
		failHTTP(w, err, false)
		p.finish(&ev, err)
		return
	}
	if cred != nil {
		putCredential(r, cred)
	}
	p.forward(w, r, &ev, p.fwd, rt)
}

// forward relays r along rt with rp, reports the outcome, and returns
// the body bytes relayed each way. Bodies pass through the budgets ev
// counts in; the answer from a credential's host, through its redactor.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, ev *Event, rp *httputil.ReverseProxy, rt *route) (up, down int64) {
	body := &countingBody{ReadCloser: r.Body, use: ev.use}
	r.Body = body
	cw := &countingWriter{ResponseWriter: w, rc: http.NewResponseController(w), idle: p.limits.IdleTimeout, use: ev.use}
	var rw http.ResponseWriter = cw
	var red *redactingWriter
	if rt.redact != nil {
		guardRequest(r)
		red = &redactingWriter{ResponseWriter: cw, r: rt.redact}
		rw = red
	}
	defer func() {
		v := recover()
		// Forget the write deadline: the connection may serve another
		// request after this one.
		_ = cw.rc.SetWriteDeadline(time.Time{})
		var err error
		ev.Dialled, err = rt.result()
		if v != nil && err == nil {
			err = fmt.Errorf("relaying the response: %v", v)
		}
		ev.BytesUp, ev.BytesDown = body.n.Load(), cw.n
		up, down = ev.BytesUp, ev.BytesDown
		p.finish(ev, err)
		if v != nil {
			panic(v) // http.ErrAbortHandler: the server drops the connection
		}
	}()
	rp.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), routeKey{}, rt)))
	if red != nil {
		red.finish()
	}
	return
}

// countingBody counts the request body bytes relayed upstream, granted
// by the budgets of use.
type countingBody struct {
	io.ReadCloser
	use *budgetUse
	n   atomic.Int64 // read by the transport's goroutine
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if grant, settle := b.use.take(true, int64(n)); settle != nil {
		settle()
		n, err = int(grant), errBudgetBytes
	}
	b.n.Add(int64(n))
	return n, err
}

// countingWriter counts response bytes, granted by the budgets of use,
// and cuts a client that stops reading for the idle timeout.
type countingWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
	use  *budgetUse
	n    int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	n, err := send(w.use, w.ResponseWriter, b, false)
	w.n += n
	return int(n), err
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// idleConn is a forwarded request's upstream connection: every read or
// write pushes its deadline out by the idle timeout, so the request ends
// when neither direction has moved for that long. Its close gives its
// place in the budgets back.
type idleConn struct {
	net.Conn
	timeout time.Duration
	use     *budgetUse
}

func (c *idleConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(c.timeout))
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(c.timeout))
	return c.Conn.Write(b)
}

func (c *idleConn) Close() error {
	c.use.done()
	return c.Conn.Close()
}
