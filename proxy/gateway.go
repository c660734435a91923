package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Gateway is one egress proxy shared by many sandboxes (docs/egress.md,
// "The shared gateway"). Each client authenticates as one of the
// gateway's Clients on every request (Proxy-Authorization, Basic, or
// SOCKS5 username/password) and is then served by a proxy of its own:
// its task's allowlist, credentials and budgets, its own bounds on
// tunnels. A request that does not authenticate is refused (407, or
// SOCKS5 authentication failure) and recorded; it never reaches any
// task's allowlist. The front, which reads requests until they
// authenticate, bounds connections per source address as a Proxy does.
type Gateway struct {
	front   *Proxy
	tenants []*tenant
}

// tenant is one client of a gateway and the proxy that serves it.
type tenant struct {
	client Client
	p      *Proxy
}

// GatewayConfig configures a Gateway.
type GatewayConfig struct {
	// Clients are the identities the gateway accepts; names are unique,
	// and so are tokens.
	Clients []Client
	// Proxy returns the configuration of a client's own proxy: its
	// task's gate, credentials, budgets (counted for this client alone),
	// CA and limits. Its Task must be the client's. Connections and
	// tunnels left zero in its Limits take DefaultGatewayClientConns and
	// DefaultGatewayClientTunnels, and the client's part of each is the
	// whole: the client is one identity, wherever it connects from.
	Proxy func(Client) (Config, error)
	// Limits bound the front: connections held, per source address, and
	// how long a client may take to authenticate.
	Limits Limits
	// OnEvent and Record receive the front's refusals (requests that did
	// not authenticate, malformed ones), as Config's do.
	OnEvent func(Event)
	Record  func(Event) error
	// Metrics counts the front's connections and refusals; give the
	// clients' proxies the same.
	Metrics *Metrics
	// Now tells the time for tokens' expiry; nil means time.Now.
	Now func() time.Time
}

// The default bounds of one gateway client: client connections it holds
// once authenticated, upstream connections it has open.
const (
	DefaultGatewayClientConns   = 1024
	DefaultGatewayClientTunnels = 256
)

// recordedError is a refusal already recorded.
type recordedError struct{ why string }

func (e *recordedError) Error() string { return e.why }

// authError is a client that did not authenticate at a gateway.
type authError struct{ why string }

func (e *authError) Error() string { return e.why }

// NewGateway validates cfg and returns a gateway ready to Serve.
func NewGateway(cfg GatewayConfig) (*Gateway, error) {
	if len(cfg.Clients) == 0 {
		return nil, errors.New("proxy: gateway config has no clients")
	}
	if cfg.Proxy == nil {
		return nil, errors.New("proxy: gateway config has no Proxy function")
	}
	cs := &clients{byName: map[string]*tenant{}, now: cfg.Now}
	if cs.now == nil {
		cs.now = time.Now
	}
	g := &Gateway{}
	hashes := map[[32]byte]string{}
	for _, c := range cfg.Clients {
		switch {
		case !validClientName(c.Name):
			return nil, fmt.Errorf("proxy: gateway client %+q: a name is 1 to %d letters, digits, '.', '_' or '-'", c.Name, maxClientName)
		case cs.byName[c.Name] != nil:
			return nil, fmt.Errorf("proxy: gateway client %q is named twice", c.Name)
		case hashes[c.TokenSHA256] != "":
			return nil, fmt.Errorf("proxy: gateway clients %q and %q have the same token", hashes[c.TokenSHA256], c.Name)
		case c.TokenSHA256 == unknownHash:
			return nil, fmt.Errorf("proxy: gateway client %q has no token hash", c.Name)
		}
		hashes[c.TokenSHA256] = c.Name
		pc, err := cfg.Proxy(c)
		if err == nil && pc.Task != c.Task {
			err = fmt.Errorf("its proxy's task is %q, not %q", pc.Task, c.Task)
		}
		if pc.Limits.MaxConns == 0 {
			pc.Limits.MaxConns = DefaultGatewayClientConns
		}
		if pc.Limits.MaxConnsPerClient == 0 {
			pc.Limits.MaxConnsPerClient = pc.Limits.MaxConns
		}
		if pc.Limits.MaxTunnels == 0 {
			pc.Limits.MaxTunnels = DefaultGatewayClientTunnels
		}
		if pc.Limits.MaxTunnelsPerClient == 0 {
			pc.Limits.MaxTunnelsPerClient = pc.Limits.MaxTunnels
		}
		var p *Proxy
		if err == nil {
			p, err = New(pc)
		}
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("proxy: gateway client %q: %w", c.Name, err)
		}
		p.identity = c.Name
		t := &tenant{client: c, p: p}
		cs.byName[c.Name] = t
		g.tenants = append(g.tenants, t)
	}
	front, err := newProxy(Config{Limits: cfg.Limits, OnEvent: cfg.OnEvent, Record: cfg.Record, Metrics: cfg.Metrics})
	if err != nil {
		g.Close()
		return nil, err
	}
	front.gw = cs
	g.front = front
	for _, t := range g.tenants {
		t.p.front = front
	}
	return g, nil
}

// reasonClientConns refuses a connection of a client holding all the
// connections it may.
const reasonClientConns = "connection of client %q refused once authenticated: %v"

// admit takes one of t's own connection slots for c, authenticated as
// t's client, or records why not: each client's connections are bounded
// by its identity, whatever address it shares with others.
func (p *Proxy) admit(t *tenant, c net.Conn, proto Protocol) (*slot, string) {
	sl, err := t.p.connShare.slot(clientOf(c.RemoteAddr().String()))
	if err != nil {
		why := fmt.Sprintf(reasonClientConns, t.client.Name, err)
		p.reject(rejectShare, proto, c.RemoteAddr().String(), "", why)
		return nil, why
	}
	return sl, ""
}

// handOff moves c, authenticated as a gateway's client, from the front p
// to the client's proxy t: t's handshake timeout bounds the rest of the
// request, t's Shutdown waits for the connection and its Close cuts it.
// On true the caller must call t.wg.Done once done with c.
func (p *Proxy) handOff(c net.Conn, t *Proxy) bool {
	p.forget(c)
	return t.begin(c)
}

// Serve accepts connections on ln and serves them until Shutdown or
// Close, as Proxy.Serve does.
func (g *Gateway) Serve(ln net.Listener) error { return g.front.Serve(ln) }

// Shutdown stops accepting connections and waits for open tunnels, as
// Proxy.Shutdown does, for every client at once.
func (g *Gateway) Shutdown(ctx context.Context) error {
	return g.each(func(p *Proxy) error { return p.Shutdown(ctx) })
}

// Close stops the gateway at once, as Proxy.Close does.
func (g *Gateway) Close() error {
	return g.each((*Proxy).Close)
}

// each runs f on the front and every client's proxy concurrently: the
// front's connection goroutines run the clients' tunnels, so that
// neither can wait for the other first.
func (g *Gateway) each(f func(*Proxy) error) error {
	ps := make([]*Proxy, 0, len(g.tenants)+1)
	if g.front != nil {
		ps = append(ps, g.front)
	}
	for _, t := range g.tenants {
		ps = append(ps, t.p)
	}
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { errs[i] = f(p) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ResetStep starts every client's per-step budgets over.
func (g *Gateway) ResetStep() {
	for _, t := range g.tenants {
		t.p.ResetStep()
	}
}
