package proxy

import (
	"net"
	"net/netip"
	"slices"
)

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
	if p.front != nil {
		return p.front.isSelf(ap) // a gateway's client: the front listens
	}
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
