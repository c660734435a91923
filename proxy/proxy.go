package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"
)

// ErrClosed is returned by Serve after Shutdown or Close.
var ErrClosed = errors.New("proxy: closed")

// Proxy is an egress proxy for one task. Create it with New, serve one or
// more listeners with Serve, and stop it with Shutdown or Close.
type Proxy struct {
	task     string
	gate     Gate
	resolver Resolver
	dialer   Dialer
	onEvent  func(Event)
	record   func(Event) error
	limits   Limits
	slots    chan struct{} // one token per open upstream connection

	hs  *http.Server // serves the connections sniffed as HTTP
	hln *connListener
	fwd *httputil.ReverseProxy
	tr  *http.Transport

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // connection goroutines and tunnels

	mu        sync.Mutex
	closing   bool // Shutdown or Close called: accept nothing new
	closed    bool // Close called: open nothing new
	serving   bool // the http.Server has been started
	listeners map[net.Listener]struct{}
	self      []netip.AddrPort // the listeners' addresses, for loop refusal
	local     []netip.Addr     // the host's addresses, when a listener is unspecified
	conns     map[net.Conn]connKind
}

// connKind says whether Shutdown may cut a connection.
type connKind uint8

const (
	kindHandshake connKind = iota // no request decided yet: Shutdown closes it
	kindTunnel                    // decided and open: Shutdown waits for it
)

// New validates cfg and returns a proxy ready to Serve.
func New(cfg Config) (*Proxy, error) {
	if cfg.Gate == nil {
		return nil, errors.New("proxy: config has no egress gate")
	}
	if cfg.Task == "" {
		return nil, errors.New("proxy: config has no task")
	}
	limits, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		task:      cfg.Task,
		gate:      cfg.Gate,
		resolver:  cfg.Resolver,
		dialer:    cfg.Dialer,
		onEvent:   cfg.OnEvent,
		record:    cfg.Record,
		limits:    limits,
		slots:     make(chan struct{}, limits.MaxTunnels),
		hln:       newConnListener(),
		listeners: map[net.Listener]struct{}{},
		conns:     map[net.Conn]connKind{},
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.dialer == nil {
		// No TCP keep-alive: a tunnel with no data either way is cut by
		// the idle timeout anyway, and keep-alive costs four setsockopt
		// calls per connection.
		p.dialer = &net.Dialer{KeepAlive: -1}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.tr = p.newTransport()
	p.fwd = p.newForwarder()
	p.hs = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: limits.HandshakeTimeout,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return p.ctx },
		// The proxy answers "OPTIONS *" like any other non-proxy request.
		DisableGeneralOptionsHandler: true,
	}
	return p, nil
}

// Serve accepts connections on ln and serves them until Shutdown or
// Close, when it returns ErrClosed. It may be called for several
// listeners at once. Serve closes ln when it returns.
func (p *Proxy) Serve(ln net.Listener) error {
	defer ln.Close()
	if !p.addListener(ln) {
		return ErrClosed
	}
	defer p.removeListener(ln)
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.isClosing() {
				return ErrClosed
			}
			if !retryable(err) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !p.begin(c) {
			c.Close()
			continue
		}
		go p.serveConn(c)
	}
}

// retryable reports whether an Accept error is a shortage (of file
// descriptors or memory) or an aborted handshake, worth retrying.
func retryable(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// serveConn reads the start of a new connection and serves it: SOCKS5
// (first byte 0x05) and HTTP CONNECT here, in this goroutine; any other
// HTTP request through the http.Server.
//
// What is read ahead sits in br and is relayed first; the tunnels then copy
// the bare connection, so that TCP to TCP splices.
func (p *Proxy) serveConn(c net.Conn) {
	defer p.wg.Done()
	_ = c.SetDeadline(time.Now().Add(p.limits.HandshakeTimeout))
	// The same allowance as net/http's: MaxHeaderBytes plus 4 KiB.
	lr := &io.LimitedReader{R: c, N: int64(p.limits.MaxHeaderBytes) + 4096}
	br := bufio.NewReaderSize(lr, 4096)
	first, err := br.Peek(1)
	if err != nil {
		p.forget(c)
		c.Close()
		return
	}
	switch first[0] {
	case socks5Version:
		p.serveSOCKS(c, br)
		return
	case socks4Version:
		p.forget(c)
		refuseSOCKS4(c)
		return
	}
	if method, err := br.Peek(len(connectMethod)); err == nil && string(method) == connectMethod {
		p.serveInlineConnect(c, br, lr)
		return
	}
	// Any other HTTP: the http.Server owns the connection from here and
	// applies its own header limit and timeout.
	p.forget(c)
	_ = c.SetDeadline(time.Time{})
	conn := &prefixConn{Conn: c, prefix: buffered(br)}
	p.startHTTP()
	if !p.hln.push(conn) {
		conn.Close()
	}
}

// startHTTP starts the http.Server on the first HTTP connection.
func (p *Proxy) startHTTP() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.serving || p.closing {
		return
	}
	p.serving = true
	go func() { _ = p.hs.Serve(p.hln) }()
}

// Shutdown stops accepting connections, closes the ones still in their
// handshake, and waits until every open tunnel and forwarded request has
// ended or ctx is done, when it returns ctx's error; Close then cuts the
// rest.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	p.closeListenersLocked()
	for c, k := range p.conns {
		if k == kindHandshake {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.hln.Close()

	hsDone := make(chan error, 1)
	go func() { hsDone <- p.hs.Shutdown(ctx) }()
	wgDone := make(chan struct{})
	go func() { p.wg.Wait(); close(wgDone) }()
	select {
	case <-wgDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-hsDone
}

// Close stops the proxy at once: it closes the listeners and every
// connection, and returns when the proxy's goroutines have ended.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closing, p.closed = true, true
	p.closeListenersLocked()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.hln.Close()
	err := p.hs.Close()
	p.cancel()
	p.tr.CloseIdleConnections()
	p.wg.Wait()
	return err
}

func (p *Proxy) closeListenersLocked() {
	for ln := range p.listeners {
		ln.Close()
	}
}

func (p *Proxy) isClosing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

// addListener registers ln and its address for loop refusal.
func (p *Proxy) addListener(ln net.Listener) bool {
	var local []netip.Addr
	ap, isTCP := listenerAddr(ln)
	if isTCP && ap.Addr().IsUnspecified() {
		local = interfaceAddrs()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	p.listeners[ln] = struct{}{}
	if isTCP {
		p.self = append(p.self, ap)
		p.local = append(p.local, local...)
	}
	return true
}

func (p *Proxy) removeListener(ln net.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.listeners, ln)
}

// listenerAddr returns a TCP listener's address, unmapped.
func listenerAddr(ln net.Listener) (netip.AddrPort, bool) {
	ta, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// interfaceAddrs lists the host's own addresses (best effort).
func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pfx.Addr().Unmap())
		}
	}
	return out
}

// isSelf reports whether dialling ap would reach one of the proxy's own
// listeners (in the proxy's network namespace).
func (p *Proxy) isSelf(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.self {
		if s.Port() != ap.Port() {
			continue
		}
		if a == s.Addr() || a.IsUnspecified() {
			return true
		}
		if s.Addr().IsUnspecified() && (a.IsLoopback() || slices.Contains(p.local, a)) {
			return true
		}
	}
	return false
}

// begin registers a newly accepted connection and its goroutine; false
// when the proxy is shutting down.
func (p *Proxy) begin(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	p.conns[c] = kindHandshake
	p.wg.Add(1)
	return true
}

// track registers the connections of a decided request, so that Shutdown
// waits for them and Close cuts them; false once Close has been called.
// The caller must call untrack when done.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = kindTunnel
	}
	p.wg.Add(1)
	return true
}

// untrack undoes track.
func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
	}
	p.mu.Unlock()
	p.wg.Done()
}

// forget drops a connection registered by begin.
func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// emit reports ev to the callbacks and returns Record's error.
func (p *Proxy) emit(ev Event) error {
	if p.onEvent != nil {
		p.onEvent(ev)
	}
	if p.record != nil {
		if err := p.record(ev); err != nil {
			return &recordError{err}
		}
	}
	return nil
}

// decided reports the decision on ev. It returns an error when the
// decision allows the request but could not be recorded: the request
// must then not go ahead.
func (p *Proxy) decided(ev *Event) error {
	err := p.emit(*ev)
	if err != nil && ev.Decision.Allowed() {
		return err
	}
	return nil
}

// newEvent starts the event of one request.
func (p *Proxy) newEvent(proto Protocol, client, requested string) Event {
	return Event{Stage: StageDecided, Time: time.Now(), Task: p.task, Client: client, Protocol: proto, Requested: requested}
}

// finish reports the end of an allowed request.
func (p *Proxy) finish(ev *Event, err error) {
	ev.Stage = StageClosed
	ev.Duration = time.Since(ev.Time)
	ev.Err = err
	_ = p.emit(*ev)
}

// open decides ev's target, reports the decision and, when the gate
// allowed it, takes a tunnel slot and dials a checked address. A refusal
// leaves ev.Decision denied and returns no error; an error is an upstream
// failure after an allow. On success the caller must release the slot.
func (p *Proxy) open(ctx context.Context, ev *Event) (net.Conn, error) {
	addrs, err := p.decide(ctx, ev)
	if rerr := p.decided(ev); rerr != nil {
		return nil, rerr
	}
	if !ev.Decision.Allowed() {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := p.acquire(); err != nil {
		return nil, err
	}
	c, ap, err := p.dial(ctx, addrs, ev.Target.Port)
	if err != nil {
		p.release()
		return nil, err
	}
	ev.Dialled = ap
	return c, nil
}
