//go:build linux || darwin

package step

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Conn is a client's end of its connection to a holder: a connected unix
// socket whose peer is checked (a *net.UnixConn, or an *os.File of one in
// non-blocking mode).
type Conn interface {
	io.ReadWriter
	SyscallConn() (syscall.RawConn, error)
	SetReadDeadline(time.Time) error
}

// Exec hands r to the holder at the other end of conn, with pipes for the
// step's stdin, stdout and stderr that it relays to and from its own,
// and returns the step's exit status once the holder has run it and
// written all of its output. When ctx ends, the holder interrupts the
// step: at once, or, when ctx's cause is ErrTerminated, after SIGTERM
// and r.Grace.
func Exec(ctx context.Context, conn Conn, r Request, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	r.StdoutTerminal, r.StderrTerminal = terminal(stdout), terminal(stderr)
	var remote, local [3]*os.File // stdin, stdout, stderr: the holder's ends, ours
	defer func() {
		closeAll(remote[:])
		closeAll(local[:])
	}()
	for i := range remote {
		if i == 2 && sameWriter(stdout, stderr) {
			// One writer, one pipe, as os/exec does: one copy into it.
			remote[2] = remote[1]
			break
		}
		rd, wr, err := os.Pipe()
		if err != nil {
			return 0, &NotTaken{"step: " + err.Error()}
		}
		if i == 0 {
			remote[i], local[i] = rd, wr
		} else {
			remote[i], local[i] = wr, rd
		}
	}
	if err := send(conn, requestFrame(r), remote[:]); err != nil {
		return 0, &NotTaken{"step: send: " + err.Error()}
	}
	closeAll(remote[:]) // the holder has its own
	defer context.AfterFunc(ctx, func() {
		// The holder sees the hang-up and interrupts the step.
		wait := 10 * time.Second
		if errors.Is(context.Cause(ctx), ErrTerminated) {
			conn.Write(terminateFrame)
			wait += r.Grace
		}
		if rc, err := conn.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_WR) })
		}
		conn.SetReadDeadline(time.Now().Add(wait))
	})()
	// Until the holder says it took the step, stdin is left unread: the
	// caller may still run it some other way.
	if a, err := readAnswer(conn); err != nil || !a.Accepted {
		if err != nil {
			return 0, &NotTaken{"step: no answer: " + err.Error()}
		}
		return 0, &NotTaken{a.Error}
	}
	var out sync.WaitGroup
	for i, w := range []io.Writer{stdout, stderr} {
		if w == nil {
			w = io.Discard
		}
		if rd := local[i+1]; rd != nil {
			out.Go(func() { io.Copy(w, rd) })
		}
	}
	go func() {
		if stdin != nil {
			io.Copy(local[0], stdin)
		}
		local[0].Close()
	}()
	a, err := readAnswer(conn)
	if err != nil {
		closeAll(local[1:]) // a holder gone or hung may never close its ends
		out.Wait()
		return 0, ErrNoAnswer
	}
	out.Wait() // the holder closed its ends before it answered
	return a.ExitCode, nil
}

// send writes frame with files' descriptors attached (SCM_RIGHTS).
func send(conn Conn, frame []byte, files []*os.File) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	n := 0
	werr := rc.Write(func(fd uintptr) bool {
		n, err = syscall.SendmsgN(int(fd), frame, syscall.UnixRights(fds...), nil, 0)
		return err != syscall.EAGAIN
	})
	switch {
	case werr != nil:
		return werr
	case err != nil:
		return err
	case n < len(frame):
		_, err = conn.Write(frame[n:])
	}
	return err
}

// terminal reports whether w is a terminal, by syscall rather than
// golang.org/x/term: the quick client links no golang.org/x/sys.
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	errno := syscall.ENOTTY
	rc.Control(func(fd uintptr) {
		var t syscall.Termios
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, ioctlGetTermios, uintptr(unsafe.Pointer(&t)))
	})
	return errno == 0
}

// sameWriter reports whether a and b are one writer.
func sameWriter(a, b io.Writer) bool {
	defer func() { recover() }() // uncomparable dynamic types
	return a != nil && a == b
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
