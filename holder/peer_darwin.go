package holder

import (
	"net"

	"golang.org/x/sys/unix"
)

// pollable returns fd, a descriptor that came with a message, in
// non-blocking mode, so that the Go runtime polls it: a read or write
// that waits on the client parks its goroutine rather than a thread
// (peer_linux.go says why). macOS has no /proc/self/fd to open a pipe
// anew, so the flag is set on the description the client sent: its own
// pipe's, made for the step (package holder/step), or, from a client of
// the user's own making, whatever it chose to send.
func pollable(fd int) int {
	unix.SetNonblock(fd, true)
	return fd
}

// peerUID is the uid of the process at the other end of c
// (LOCAL_PEERCRED, what getpeereid reads).
func peerUID(c *net.UnixConn) (int, error) {
	var cred *unix.Xucred
	err := control(c, func(fd int) (err error) {
		cred, err = unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		return err
	})
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
