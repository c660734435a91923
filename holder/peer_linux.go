package holder

import (
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// pollable returns fd, a descriptor that came with a message, or, for a
// pipe, a descriptor of the holder's own for it, opened anew through
// /proc/self/fd in non-blocking mode (fd is closed then): the Go runtime
// polls it, so a read or write that waits on the client parks its
// goroutine, and closing the file ends it. In blocking mode, as a client
// of its own making may pass a pipe, each such wait took a thread for as
// long as the client kept the other end open (a step's stdin it never
// wrote nor closed), until the runtime's thread limit ended the holder.
// A new open file description, not O_NONBLOCK set on the client's: that
// one may be shared (a shell's stdout), and would stay non-blocking
// there.
func pollable(fd int) int {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || uint32(st.Mode)&unix.S_IFMT != unix.S_IFIFO {
		return fd
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return fd
	}
	own, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), fl&unix.O_ACCMODE|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fd // a write end whose pipe has no reader: a write fails at once
	}
	unix.Close(fd)
	return own
}

// peerUID is the uid of the process at the other end of c
// (SO_PEERCRED).
func peerUID(c *net.UnixConn) (int, error) {
	var cred *unix.Ucred
	err := control(c, func(fd int) (err error) {
		cred, err = unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		return err
	})
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
