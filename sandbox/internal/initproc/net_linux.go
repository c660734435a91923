package initproc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// network brings lo up in the sandbox's empty network namespace (it
// starts DOWN) and, when asked, opens the egress proxy's listener on
// 127.0.0.1 there. It returns the listener's descriptor (-1 without one)
// and its port. A raw ioctl is enough for one flag on one link; netlink
// would cost a library's start-up in every init.
func (s *initState) network() (int, int, error) {
	if s.open(HoleNetNS) {
		// The host's lo is up, and not the init's to change.
		s.receipt["network"] = "the host's network namespace: test hole"
	} else if err := linkUp("lo"); err != nil {
		return -1, 0, err
	} else {
		s.receipt["network"] = "empty network namespace, lo only"
	}
	if !s.cfg.Proxy {
		return -1, 0, nil
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("proxy listener socket: %w", err)
	}
	sa := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("bind proxy listener: %w", err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("listen: %w", err)
	}
	name, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("getsockname: %w", err)
	}
	port := name.(*unix.SockaddrInet4).Port
	s.receipt["network"] = fmt.Sprintf("empty network namespace, lo only; egress proxy listener 127.0.0.1:%d passed to the parent", port)
	return fd, port, nil
}

// linkUp sets IFF_UP on the named link.
func linkUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s up: socket: %w", name, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return fmt.Errorf("%s up: %w", name, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("%s up: SIOCGIFFLAGS: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("%s up: SIOCSIFFLAGS: %w", name, err)
	}
	return nil
}
