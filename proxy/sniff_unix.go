//go:build unix

package proxy

import (
	"errors"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peekByte returns the first byte a client sent without consuming it:
// recv(MSG_PEEK) leaves it in the kernel's buffer, so the connection stays
// the bare *net.TCPConn the listener returned and tunnels through it can
// splice. Connections without a file descriptor fall back to readByte.
// The connection's read deadline applies.
func peekByte(c net.Conn) (byte, net.Conn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return readByte(c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return readByte(c)
	}
	var (
		b    [1]byte
		n    int
		rerr error
	)
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK)
		return !errors.Is(rerr, unix.EAGAIN) && !errors.Is(rerr, unix.EINTR)
	})
	switch {
	case err != nil:
		return 0, c, err
	case rerr != nil:
		return 0, c, rerr
	case n == 0:
		return 0, c, io.EOF
	}
	return b[0], c, nil
}
