package proxy

import (
	"fmt"
	"net/netip"
	"sync"
)

// client identifies a client for the fair share of the proxy's limits: its
// source address, an IPv6 one by its /64 (a host picks freely within its
// /64, so each address of it is not another client). A client of a Unix
// socket listener, which has no address, is the zero client: all such
// clients share one part.
type client netip.Prefix

// clientOf returns the client that remote (a connection's remote address,
// host:port) belongs to.
func clientOf(remote string) client {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return client{}
	}
	a := ap.Addr().Unmap().WithZone("")
	bits := a.BitLen()
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return client(p)
}

func (c client) String() string {
	p := netip.Prefix(c)
	switch {
	case !p.IsValid():
		return "local socket clients"
	case p.IsSingleIP():
		return p.Addr().String()
	}
	return p.String()
}

// share counts what each client holds of one limit. Hand-written: a map
// of counters under a mutex.
type share struct {
	what        string // "connections", "concurrent tunnels": for reasons
	max, perMax int

	mu    sync.Mutex
	total int
	per   map[client]int
}

func newShare(what string, max, perMax int) *share {
	return &share{what: what, max: max, perMax: perMax, per: map[client]int{}}
}

// take counts one more for c, or returns why not: the proxy is at its
// limit, or c at its part of it.
func (s *share) take(c client) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.total >= s.max:
		return &limitError{fmt.Sprintf("the proxy is at its limit of %d %s", s.max, s.what)}
	case s.per[c] >= s.perMax:
		return &limitError{fmt.Sprintf("client %s is at its share (%d) of the proxy's limit of %d %s", c, s.perMax, s.max, s.what)}
	}
	s.total++
	s.per[c]++
	return nil
}

// slot takes one for c, as a slot to give back, or returns why not (a
// *limitError).
func (s *share) slot(c client) (*slot, error) {
	if err := s.take(c); err != nil {
		return nil, err
	}
	return &slot{s: s, c: c}, nil
}

// give undoes one take for c.
func (s *share) give(c client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.per[c]--; s.per[c] <= 0 {
		delete(s.per, c)
	}
}

// limitError is a refusal for lack of a free share.
type limitError struct{ why string }

func (e *limitError) Error() string { return e.why }

// slot is one connection's hold on the connection share, given back
// exactly once, by whichever of the paths that end a connection gets there
// first.
type slot struct {
	once sync.Once
	s    *share
	c    client
	m    *Metrics // counts the client connections of a connection slot
}

func (sl *slot) release() {
	if sl != nil {
		sl.once.Do(func() {
			sl.s.give(sl.c)
			sl.m.connClosed()
		})
	}
}
