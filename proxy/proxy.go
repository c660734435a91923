package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// ErrClosed is returned by Serve after Shutdown or Close.
var ErrClosed = errors.New("proxy: closed")

// Proxy is an egress proxy for one task. Create it with New, serve one or
// more listeners with Serve, and stop it with Shutdown or Close.
type Proxy struct {
	task        string
	identity    string   // a gateway's client this proxy serves ("" for none)
	gw          *clients // a gateway's front: its client identities (nil for a proxy of one task)
	front       *Proxy   // a gateway client's: the front, whose listeners are the loop to refuse
	metrics     *Metrics
	gate        Gate
	resolver    Resolver
	dialer      Dialer
	onEvent     func(Event)
	record      func(Event) error
	limits      Limits
	connShare   *share // client connections held, per client
	tunnelShare *share // upstream connections open, per client
	rejects     *rejects

	hs  *http.Server // serves the connections sniffed as HTTP
	hln *connListener
	fwd *httputil.ReverseProxy
	tr  *http.Transport

	ca            *CA
	upstreamRoots *x509.CertPool
	creds         map[string]*Credential
	echo          map[string]*redactor // the answers' redactors, by credential name
	redact        *redactor            // of every credential: what the proxy reports passes it
	budget        *budgets
	is            *http.Server  // serves the requests of inspected tunnels
	iln           *connListener // hands the inspected connections to is
	inspections   sync.Map      // the connection handed to is -> *inspection
	pools         map[string]*x509.CertPool
	sessions      tls.ClientSessionCache // upstream TLS sessions, resumed by later tunnels to the same host

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // connection goroutines and tunnels

	mu         sync.Mutex
	closing    bool // Shutdown or Close called: accept nothing new
	closed     bool // Close called: open nothing new
	serving    bool // the http.Server has been started
	inspecting bool // the inspection server has been started
	listeners  map[net.Listener]struct{}
	self       []netip.AddrPort // the listeners' addresses, for loop refusal
	local      []netip.Addr     // the host's addresses, when a listener is unspecified
	conns      map[net.Conn]connKind
	handshake  map[net.Conn]*time.Timer // the handshake timeouts of kindHandshake conns
}

// New validates cfg and returns a proxy ready to Serve.
func New(cfg Config) (*Proxy, error) {
	if cfg.Gate == nil {
		return nil, errors.New("proxy: config has no egress gate")
	}
	if cfg.Task == "" {
		return nil, errors.New("proxy: config has no task")
	}
	return newProxy(cfg)
}

// newProxy is New without the checks a gateway's front does without (it
// decides nothing itself).
func newProxy(cfg Config) (*Proxy, error) {
	limits, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	creds, err := checkCredentials(cfg.Credentials)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		ca:            cfg.CA,
		upstreamRoots: cfg.UpstreamRoots,
		creds:         creds,
		echo:          map[string]*redactor{},
		iln:           newConnListener(),
		pools:         map[string]*x509.CertPool{},
		sessions:      tls.NewLRUClientSessionCache(256),
		task:          cfg.Task,
		gate:          cfg.Gate,
		resolver:      cfg.Resolver,
		dialer:        cfg.Dialer,
		onEvent:       cfg.OnEvent,
		record:        cfg.Record,
		metrics:       cfg.Metrics,
		limits:        limits,
		connShare:     newShare("connections", limits.MaxConns, limits.MaxConnsPerClient),
		tunnelShare:   newShare("concurrent tunnels", limits.MaxTunnels, limits.MaxTunnelsPerClient),
		hln:           newConnListener(),
		listeners:     map[net.Listener]struct{}{},
		conns:         map[net.Conn]connKind{},
		handshake:     map[net.Conn]*time.Timer{},
	}
	if len(creds) > 0 {
		all := make([]*Credential, 0, len(creds))
		for name, c := range creds {
			p.echo[name] = newRedactor(c)
			all = append(all, c)
		}
		p.redact = newRedactor(all...)
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
	p.rejects = newRejects(func(ev Event) { _ = p.emit(ev) })
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.tr = p.newTransport()
	p.fwd = p.newForwarder()
	p.is = p.newInspectionServer()
	p.budget = newBudgets(cfg.Budgets, p.budgetReached)
	p.hs = p.newServer(p.serveHTTP, func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	})
	p.hs.ConnState = func(c net.Conn, st http.ConnState) {
		if pc, ok := c.(*prefixConn); ok && st == http.StateClosed {
			pc.closed()
		}
	}
	return p, nil
}

// newServer is one of the proxy's two http.Servers: its limits and
// timeouts, its connections' contexts made by connContext.
func (p *Proxy) newServer(h http.HandlerFunc, connContext func(context.Context, net.Conn) context.Context) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: p.limits.HandshakeTimeout,
		IdleTimeout:       p.limits.IdleTimeout,
		MaxHeaderBytes:    p.limits.MaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return p.ctx },
		ConnContext:       connContext,
		// The proxy answers "OPTIONS *" like any other non-proxy request.
		DisableGeneralOptionsHandler: true,
	}
}

// Serve accepts connections on ln and serves them until Shutdown or
// Close, when it returns ErrClosed. It may be called for several
// listeners at once. Serve closes ln when it returns.
//
// On Linux, Serve sets TCP_DEFER_ACCEPT on a TCP listener: a connection
// is accepted once its client has sent something (both protocols have
// the client speak first), or after a second of silence.
func (p *Proxy) Serve(ln net.Listener) error {
	defer ln.Close()
	if !p.addListener(ln) {
		return ErrClosed
	}
	deferAccept(ln)
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
		remote := c.RemoteAddr().String()
		sl, err := p.takeConn(remote)
		if err != nil {
			// Refused at once, not queued: the connection's slot is what
			// bounds airlock's own sockets and memory.
			c.Close()
			p.reject(rejectShare, ProtocolUnknown, remote, "", "connection refused as soon as it was accepted: "+err.Error())
			continue
		}
		if !p.begin(c) {
			sl.release()
			c.Close()
			continue
		}
		go p.serveConn(c, sl)
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
//
// The handshake timeout, armed by begin, closes c if its request has not
// been read in time. sl is c's hold on the connection share: released when
// c is done with, here or, for a connection handed to the http.Server, when
// the server closes it (prefixConn.closed) or its hijacked tunnel ends.
func (p *Proxy) serveConn(c net.Conn, sl *slot) {
	defer p.wg.Done()
	handedOver := false
	defer func() {
		if !handedOver {
			sl.release()
		}
	}()
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
		p.serveSOCKS4(c, br)
		return
	}
	if method, err := br.Peek(len(connectMethod)); err == nil && string(method) == connectMethod {
		p.serveInlineConnect(c, br, lr)
		return
	}
	// Any other HTTP: the http.Server owns the connection from here and
	// applies its own header limit and timeout.
	p.forget(c)
	conn := &prefixConn{Conn: c, first: firstLine(br), prefix: buffered(br), p: p, slot: sl}
	p.startServer(&p.serving, p.hs, p.hln)
	if !p.hln.push(conn) {
		conn.Close()
		return
	}
	handedOver = true
}

// takeConn takes a slot of the connection share for the client at
// remote, counted in the metrics.
func (p *Proxy) takeConn(remote string) (*slot, error) {
	sl, err := p.connShare.slot(clientOf(remote))
	if err == nil {
		p.metrics.connOpened()
		sl.m = p.metrics
	}
	return sl, err
}

// startServer starts srv on ln, on the first connection handed to it;
// started, under p.mu, says it has been.
func (p *Proxy) startServer(started *bool, srv *http.Server, ln *connListener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *started || p.closing {
		return
	}
	*started = true
	go func() { _ = srv.Serve(ln) }()
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
	p.iln.Close()

	hsDone := make(chan error, 2)
	go func() { hsDone <- p.hs.Shutdown(ctx) }()
	go func() { hsDone <- p.is.Shutdown(ctx) }()
	wgDone := make(chan struct{})
	go func() { p.wg.Wait(); close(wgDone) }()
	defer p.rejects.flush() // what the window still holds
	select {
	case <-wgDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return errors.Join(<-hsDone, <-hsDone)
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
	p.iln.Close()
	err := errors.Join(p.hs.Close(), p.is.Close())
	p.cancel()
	p.tr.CloseIdleConnections()
	p.wg.Wait()
	p.rejects.close()
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
