package proxy

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// idleProbe returns the tunnel's connections and a probe of how long no
// data has arrived on either. For two bare TCP connections it asks the
// kernel (TCP_INFO's last_data_recv) and leaves them unwrapped, so the
// copies splice; otherwise it wraps them to watch their reads.
func idleProbe(a, b net.Conn) (net.Conn, net.Conn, func() (time.Duration, bool)) {
	ta, okA := a.(*net.TCPConn)
	tb, okB := b.(*net.TCPConn)
	if !okA || !okB {
		return trackActivity(a, b)
	}
	// TCP_INFO has carried last_data_recv since Linux 2.6; a probe that
	// fails means the connections are closed, which ends the watch.
	return a, b, func() (time.Duration, bool) {
		ia, okA := tcpIdle(ta)
		ib, okB := tcpIdle(tb)
		return min(ia, ib), okA && okB
	}
}

// tcpIdle is the time since c last received data, from TCP_INFO.
func tcpIdle(c *net.TCPConn) (time.Duration, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || gerr != nil {
		return 0, false
	}
	return time.Duration(info.Last_data_recv) * time.Millisecond, true
}
