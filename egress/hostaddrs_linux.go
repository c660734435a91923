package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// subscribeAddrChanges opens an rtnetlink socket that receives a message
// for every IPv4 and IPv6 address added or removed and every route
// changed (a local route among them), and sends on the
// returned channel once per message (or lost message: an overrun counts
// as a change). The channel closes if the socket fails.
func subscribeAddrChanges() (<-chan struct{}, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("egress: rtnetlink socket: %w", err)
	}
	sa := &unix.SockaddrNetlink{Family: unix.AF_NETLINK,
		Groups: unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR | unix.RTMGRP_IPV4_ROUTE | unix.RTMGRP_IPV6_ROUTE}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("egress: rtnetlink subscription: %w", err)
	}
	// Non-blocking, so reads wait in the runtime's poller, not a thread.
	f := os.NewFile(uintptr(fd), "rtnetlink")
	changes := make(chan struct{}, 1)
	go func() {
		defer close(changes)
		defer f.Close()
		buf := make([]byte, 64<<10)
		for {
			_, err := f.Read(buf)
			// ENOBUFS: the receive buffer overran and messages were lost,
			// which is a change too.
			if err != nil && !errors.Is(err, unix.ENOBUFS) {
				return
			}
			select {
			case changes <- struct{}{}:
			default: // a reading is already due
			}
		}
	}()
	return changes, nil
}

// localRoutes returns the destinations of the routes of type local in
// the kernel's local table (255): where the host delivers to itself,
// every address of its interfaces and any prefix routed to it as a
// whole ("ip route add local 203.0.113.0/24 dev lo"). A local route of
// another table, reached only through a policy rule (a TPROXY setup),
// is not read.
func localRoutes() ([]netip.Prefix, error) {
	rib, err := syscall.NetlinkRIB(unix.RTM_GETROUTE, unix.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("egress: read the routes: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, fmt.Errorf("egress: read the routes: %w", err)
	}
	var out []netip.Prefix
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWROUTE || len(m.Data) < unix.SizeofRtMsg {
			continue
		}
		rt := (*syscall.RtMsg)(unsafe.Pointer(&m.Data[0]))
		if rt.Type != unix.RTN_LOCAL || rt.Table != unix.RT_TABLE_LOCAL {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return nil, fmt.Errorf("egress: read the routes: %w", err)
		}
		for _, a := range attrs {
			if a.Attr.Type != unix.RTA_DST {
				continue
			}
			if addr, ok := netip.AddrFromSlice(a.Value); ok {
				if p, err := addr.Unmap().Prefix(int(rt.Dst_len)); err == nil {
					out = append(out, p)
				}
			}
		}
	}
	return out, nil
}
