package proxy

import (
	"net"
	"time"
)

// connKind says whether Shutdown may cut a connection.
type connKind uint8

const (
	kindHandshake connKind = iota // no request decided yet: Shutdown closes it
	kindTunnel                    // decided and open: Shutdown waits for it
)

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

// requested marks a connection whose request has been read: Shutdown
// lets its decision and tunnel finish. Its handshake deadline is lifted;
// resolving and dialling have their own timeout.
func (p *Proxy) requested(c net.Conn) {
	_ = c.SetDeadline(time.Time{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.conns[c]; ok {
		p.conns[c] = kindTunnel
	}
}

// forget drops a connection registered by begin.
func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}
