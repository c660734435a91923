package egress

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// HostAddrs returns the addresses of this host's interfaces, as the
// gate's default LocalAddrs. They are read when first asked for, and on
// Linux read again whenever the kernel announces an address change (an
// rtnetlink subscription), so a decision sees a new address within moments
// of its being added. Where no subscription is possible they are read on
// every call. When they cannot be read at all, every address counts as the
// host's own: the gate then fails closed.
func HostAddrs() LocalAddrs { return hostAddrs }

var hostAddrs = &hostWatch{}

// hostWatch is HostAddrs' set.
type hostWatch struct {
	once sync.Once
	set  atomic.Pointer[addrSet]
	poll atomic.Bool // no subscription: read on every call
}

// addrSet is one reading of the host's addresses: the addresses of its
// interfaces, and the local routes for more than one address (on Linux,
// "AnyIP": a prefix routed to the host itself, whose every address it
// accepts connections on, without any being an interface's).
type addrSet struct {
	m      map[netip.Addr]struct{}
	ranges []netip.Prefix
	err    error
}

// Contains reports whether a is an address of one of the host's
// interfaces or in one of its local routes (true for every address when
// they cannot be read).
func (h *hostWatch) Contains(a netip.Addr) bool {
	h.once.Do(h.start)
	s := h.set.Load()
	if h.poll.Load() {
		s = readHostAddrs()
	}
	if s.err != nil {
		return true
	}
	a = a.WithZone("").Unmap()
	if _, ok := s.m[a]; ok {
		return true
	}
	for _, p := range s.ranges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// start subscribes to address changes, then reads the addresses: a change
// between the two is read either way.
func (h *hostWatch) start() {
	changes, err := subscribeAddrChanges()
	h.set.Store(readHostAddrs())
	if err != nil {
		h.poll.Store(true)
		return
	}
	go func() {
		for range changes {
			h.set.Store(readHostAddrs())
		}
		h.poll.Store(true) // the subscription ended
	}()
}

// readHostAddrs reads the addresses of every interface of the host and
// its local routes.
func readHostAddrs() *addrSet {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return &addrSet{err: err}
	}
	local, err := localRoutes()
	if err != nil {
		return &addrSet{err: err}
	}
	s := &addrSet{m: make(map[netip.Addr]struct{}, len(ifaddrs))}
	for _, p := range local {
		if p.IsSingleIP() {
			s.m[p.Addr()] = struct{}{}
		} else {
			s.ranges = append(s.ranges, p)
		}
	}
	for _, ia := range ifaddrs {
		var ip net.IP
		switch v := ia.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			s.m[a.Unmap()] = struct{}{}
		}
	}
	return s
}
