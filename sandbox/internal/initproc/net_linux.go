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
	if s.cfg.Network != NetOwn {
		s.sharedNetwork()
	} else if err := s.control("network", s.loUp); err != nil {
		return -1, 0, err
	}
	if !s.cfg.Proxy {
		return -1, 0, nil
	}
	avoid := 0
	if s.cfg.Probe != nil {
		if sa, ok := parseAddr4(s.cfg.Probe.CanaryAddr); ok {
			avoid = sa.Port
		}
	}
	fd, port, err := listenAvoiding(avoid, listenLoopback)
	if err != nil {
		return -1, 0, err
	}
	s.receipt["network"] = s.networkReceipt(port)
	return fd, port, nil
}

// listenAvoiding returns a listener from listen whose port is not avoid.
// The start-up probe dials the host's canary by its port number in the
// sandbox's namespace: on the proxy listener's port it would reach the
// proxy and refuse a sound start. Another listener is taken while the
// first still holds that port.
func listenAvoiding(avoid int, listen func() (int, int, error)) (int, int, error) {
	fd, port, err := listen()
	if err != nil || avoid == 0 || port != avoid {
		return fd, port, err
	}
	other, otherPort, err := listen()
	unix.Close(fd)
	return other, otherPort, err
}

// loUp brings lo up in the sandbox's own network namespace.
func (s *initState) loUp() error {
	if err := linkUp("lo"); err != nil {
		return err
	}
	s.receipt["network"] = "empty network namespace, lo only"
	return nil
}

// listenLoopback opens a TCP listener on 127.0.0.1 at a port the kernel
// picks and returns it and the port.
func listenLoopback() (int, int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("proxy listener socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
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
	return fd, name.(*unix.SockaddrInet4).Port, nil
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
