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

// begin registers a newly accepted connection and its goroutine, and arms
// its handshake timeout; false when the proxy is shutting down.
func (p *Proxy) begin(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	p.conns[c] = kindHandshake
	p.handshake[c] = time.AfterFunc(p.limits.HandshakeTimeout, func() { p.handshakeExpired(c) })
	p.wg.Add(1)
	return true
}

// handshakeExpired closes c if its request has still not been read: the
// reads of its handshake then fail, and its goroutine ends.
func (p *Proxy) handshakeExpired(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k, ok := p.conns[c]; ok && k == kindHandshake && p.handshake[c] != nil {
		delete(p.handshake, c)
		c.Close()
	}
}

// endHandshake disarms c's handshake timeout; p.mu is held.
func (p *Proxy) endHandshake(c net.Conn) {
	if x, ok := p.handshake[c]; ok {
		delete(p.handshake, c)
		x.Stop()
	}
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
// lets its decision and tunnel finish. Its handshake timeout is disarmed;
// resolving and dialling have their own.
func (p *Proxy) requested(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endHandshake(c)
	if _, ok := p.conns[c]; ok {
		p.conns[c] = kindTunnel
	}
}

// forget drops a connection registered by begin, and reports whether its
// handshake timeout had fired (and closed it).
func (p *Proxy) forget(c net.Conn) (expired bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k, ok := p.conns[c]
	_, armed := p.handshake[c]
	p.endHandshake(c)
	delete(p.conns, c)
	return ok && k == kindHandshake && !armed
}
