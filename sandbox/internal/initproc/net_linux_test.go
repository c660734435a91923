package initproc

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestListenAvoiding gives the proxy listener another port when the first
// one the kernel picked is the host canary's port number.
func TestListenAvoiding(t *testing.T) {
	ports := []int{4242, 4343}
	var opened []int
	listen := func() (int, int, error) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return -1, 0, err
		}
		opened = append(opened, fd)
		p := ports[0]
		ports = ports[1:]
		return fd, p, nil
	}
	fd, port, err := listenAvoiding(4242, listen)
	if err != nil || port != 4343 || fd != opened[1] {
		t.Fatalf("listenAvoiding(4242): fd %d port %d %v; want the second listener, port 4343", fd, port, err)
	}
	if _, err := unix.FcntlInt(uintptr(opened[0]), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("the listener on the canary's port was not closed: %v", err)
	}
	unix.Close(fd)
	fd, port, err = listenAvoiding(4242, listenLoopback)
	if err != nil || port == 4242 || port == 0 {
		t.Fatalf("listenAvoiding with a real listener: port %d %v", port, err)
	}
	unix.Close(fd)
}
