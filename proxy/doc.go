// Package proxy is airlock's egress proxy: the only way out of a sandbox.
//
// One listener serves both HTTP proxy requests (CONNECT and absolute-form
// GET, POST, ...) and SOCKS5 (told apart by the first byte, 0x05). Every
// request is decided by the egress gate for the proxy's task: a name is
// resolved once, every address is checked, the name is refused when any
// address is always blocked, and the proxy dials one of the addresses it
// checked, never the name, so DNS rebinding gains nothing. IP literals in
// any spelling are normalised by the gate and never reach the resolver.
//
// A name is resolved exactly as decided, fully qualified ("name."), so
// that no search domain is appended to it.
//
// Refusals are HTTP 403 with the reason in the body and in an
// X-Airlock-Reason header, or SOCKS5 reply 2 ("connection not allowed by
// ruleset"). Upstream failures after an allow are HTTP 502 or SOCKS5
// replies 3, 4 or 5, with a reason that says the gate allowed the request.
// SOCKS4 is refused. What the proxy refuses before any decision (a
// malformed request, SOCKS4, a connection past its limits) is reported
// too, coalesced so that a flood is counted rather than reported one by
// one.
//
// Client connections and upstream connections are bounded (Limits), and
// each client (a source address) may hold only its part of each, so that
// one client cannot take them all; past a bound a connection is closed at
// once and a tunnel refused with 503. SandboxLimits derives the bounds of
// a sandbox's proxy from its openFiles cap. docs/egress.md is the
// contract.
//
// Tunnels (CONNECT and SOCKS5) copy between the bare connections, so on
// Linux the kernel splices TCP to TCP without copying through user space;
// each direction is half-closed when its source ends, and a tunnel with no
// data either way for the idle timeout is cut.
//
// The proxy is a library: Serve takes any net.Listener (the sandbox hands
// it one made inside its network namespace), and the resolver, the dialer
// and the per-connection event callback are injectable. A TCP listener is
// best made without keep-alive (net.ListenConfig{KeepAlive: -1}): the idle
// timeout cuts idle connections, and keep-alive costs four system calls
// per accepted connection.
//
// Connection setup is kept cheap, since on a small host it is mostly
// spent waking threads: Serve sets TCP_DEFER_ACCEPT (a connection arrives
// with its request), the handshake, lookup, dial and idle timeouts are
// checked by one goroutine on a coarse tick rather than by runtime timers
// on every connection, and a connection's goroutines are reused from
// earlier ones, whose stacks have already grown (bench/proxy measures it).
package proxy
