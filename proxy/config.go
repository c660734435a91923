package proxy

import (
	"context"
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
}

var _ Gate = (*egress.Gate)(nil)

// Resolver looks up the addresses of a host name. *net.Resolver
// satisfies it.
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
}

// Limits bound what one proxy may hold open and how long it waits.
type Limits struct {
	// MaxTunnels is the most upstream connections (tunnels and forwarded
	// requests) open at once; more are refused. Default 1024.
	MaxTunnels int
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
	DefaultMaxTunnels       = 1024
	DefaultMaxHeaderBytes   = 64 << 10
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultDialTimeout      = 10 * time.Second
)

// withDefaults fills in zero limits and rejects negative ones.
func (l Limits) withDefaults() (Limits, error) {
	if l.MaxTunnels < 0 || l.MaxHeaderBytes < 0 || l.HandshakeTimeout < 0 || l.IdleTimeout < 0 || l.DialTimeout < 0 {
		return l, errors.New("proxy: limits must not be negative")
	}
	if l.MaxTunnels == 0 {
		l.MaxTunnels = DefaultMaxTunnels
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
