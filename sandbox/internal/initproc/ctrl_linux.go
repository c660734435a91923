package initproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Ctrl is one end of the control socketpair (see protocol.go). It is used
// by one goroutine at a time on each side.
type Ctrl struct {
	fd int
}

// newCtrlPair makes the control socketpair, both ends close-on-exec.
func NewCtrlPair() (parent *Ctrl, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("control socketpair: %w", err)
	}
	return &Ctrl{fd: fds[0]}, os.NewFile(uintptr(fds[1]), "airlock-ctrl"), nil
}

// send writes m as one packet, with fds attached.
func (c *Ctrl) Send(m Message, fds ...int) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("control: encode %s: %w", m.Kind, err)
	}
	if len(b) > maxPacket {
		return fmt.Errorf("control: %s message of %d bytes exceeds %d", m.Kind, len(b), maxPacket)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for {
		err = unix.Sendmsg(c.fd, b, oob, nil, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("control: send %s: %w", m.Kind, err)
	}
	return nil
}

// packets are the buffers Recv reads a packet into: one of maxPacket
// bytes made for every message would be most of what either side
// allocates per step, and its garbage collections.
var packets = sync.Pool{New: func() any { return new([maxPacket]byte) }}

// MaxFDs is the most descriptors one packet carries: a step's three
// streams and, for each of its two cgroup v1 hierarchies, the tasks
// files of its group and of the session's (ExecStep.Groups).
const MaxFDs = 8

// recv reads one packet. Received descriptors are close-on-exec; the
// caller owns them. io.EOF means the other end is gone.
func (c *Ctrl) Recv() (Message, []int, error) {
	p := packets.Get().(*[maxPacket]byte)
	defer packets.Put(p)
	buf := p[:]
	var oobBuf [64]byte // unix.CmsgSpace(4*MaxFDs), and more than enough
	oob := oobBuf[:unix.CmsgSpace(4*MaxFDs)]
	var (
		n, oobn, flags int
		err            error
	)
	for {
		n, oobn, flags, _, err = unix.Recvmsg(c.fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return Message{}, nil, fmt.Errorf("control: receive: %w", err)
	}
	fds, err := parseRights(oob[:oobn])
	if err != nil {
		return Message{}, nil, err
	}
	if n == 0 {
		CloseAll(fds)
		return Message{}, nil, io.EOF
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		CloseAll(fds)
		return Message{}, nil, errors.New("control: packet truncated")
	}
	var m Message
	if err := json.Unmarshal(buf[:n], &m); err != nil {
		CloseAll(fds)
		return Message{}, nil, fmt.Errorf("control: decode: %w", err)
	}
	return m, fds, nil
}

// Close closes c; closing a nil or closed Ctrl does nothing.
func (c *Ctrl) Close() error {
	if c == nil || c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

func parseRights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("control: parse control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		r, err := unix.ParseUnixRights(&m)
		if err != nil {
			CloseAll(fds)
			return nil, fmt.Errorf("control: parse rights: %w", err)
		}
		fds = append(fds, r...)
	}
	return fds, nil
}

// CloseAll closes every descriptor of fds that is not negative.
func CloseAll(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// Closed reports whether c is nil or closed.
func (c *Ctrl) Closed() bool { return c == nil || c.fd < 0 }
