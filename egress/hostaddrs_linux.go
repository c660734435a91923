package egress

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// subscribeAddrChanges opens an rtnetlink socket that receives a message
// for every IPv4 and IPv6 address added or removed, and sends on the
// returned channel once per message (or lost message: an overrun counts
// as a change). The channel closes if the socket fails.
func subscribeAddrChanges() (<-chan struct{}, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("egress: rtnetlink socket: %w", err)
	}
	sa := &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR}
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
