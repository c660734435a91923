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
// A tunnel's first bytes are looked at before any reaches the
// destination: a TLS ClientHello must name the tunnel's host (no domain
// fronting), plain HTTP must name it in every request (which is passed on
// request by request, as parsed), and an entry may require TLS (port 443
// by default) or HTTP. An inspected entry's tunnels are terminated with a
// certificate of the proxy's CA (a CA made in memory per session, whose
// key never leaves the process), and every request in them (HTTP/1.1 or
// HTTP/2) is decided by the entry's rules, given its credential, counted
// in the budgets and recorded before it is forwarded over the tunnel's
// own verified connections. Every answer from a credential's host, and
// every string the proxy reports, passes a redactor of the value in the
// spellings a client decodes; what it cannot search is refused. Budgets count bytes, requests and
// connections exactly; a budget reached refuses with 429 and ends opaque
// tunnels.
//
// Tunnels (CONNECT and SOCKS5) copy between the bare connections, so on
// Linux the kernel splices TCP to TCP without copying through user space;
// each direction is half-closed when its source ends, and a tunnel with no
// data either way for the idle timeout is cut.
//
// A Gateway is one proxy shared by many sandboxes: each client
// authenticates on every request (Proxy-Authorization Basic, or SOCKS5
// username/password) as one of its Clients, by a token whose SHA-256 it
// holds, and is served by a proxy of its own, for its own task, with its
// own budgets and bounds; what does not authenticate is refused (407) and
// reaches no allowlist. Metrics counts decisions, bytes, connections and
// latencies for the Prometheus text format.
//
// The proxy is a library: Serve takes any net.Listener (the sandbox hands
// it one made inside its network namespace), and the resolver, the dialer
// and the per-connection event callback are injectable. A TCP listener is
// best made without keep-alive (net.ListenConfig{KeepAlive: -1}): the idle
// timeout cuts idle connections, and keep-alive costs four system calls
// per accepted connection.
//
// Connection setup is kept cheap, since on a small host it is mostly
// spent waking threads: Serve sets TCP_DEFER_ACCEPT, so a connection
// arrives with its request (bench/proxy measures it).
package proxy
