package proxy

import (
	"net"

	"golang.org/x/sys/unix"
)

// deferAcceptSeconds is how long the kernel holds a connection that has
// sent nothing before handing it to the proxy anyway (rounded up to its
// SYN-ACK retransmission schedule); the handshake timeout runs from then.
const deferAcceptSeconds = 1

// deferAccept asks the kernel to hand over a TCP connection only once its
// first bytes have arrived (TCP_DEFER_ACCEPT). HTTP and SOCKS5 clients
// speak first, so a new connection then wakes the proxy once, with its
// request already readable, rather than once to accept it and again to
// read it. Best effort: on an error the listener is left as it was.
func deferAccept(ln net.Listener) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return
	}
	raw, err := tl.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, deferAcceptSeconds)
	})
}
