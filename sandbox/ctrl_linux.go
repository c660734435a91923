package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ctrl is one end of the control socketpair (see protocol.go). It is used
// by one goroutine at a time on each side.
type ctrl struct {
	fd int
}

// newCtrlPair makes the control socketpair, both ends close-on-exec.
func newCtrlPair() (parent *ctrl, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("control socketpair: %w", err)
	}
	return &ctrl{fd: fds[0]}, os.NewFile(uintptr(fds[1]), "airlock-ctrl"), nil
}

// send writes m as one packet, with fds attached.
func (c *ctrl) send(m message, fds ...int) error {
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

// recv reads one packet. Received descriptors are close-on-exec; the
// caller owns them. io.EOF means the other end is gone.
func (c *ctrl) recv() (message, []int, error) {
	buf := make([]byte, maxPacket)
	oob := make([]byte, unix.CmsgSpace(4*4))
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
		return message{}, nil, fmt.Errorf("control: receive: %w", err)
	}
	fds, err := parseRights(oob[:oobn])
	if err != nil {
		return message{}, nil, err
	}
	if n == 0 {
		closeAll(fds)
		return message{}, nil, io.EOF
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		closeAll(fds)
		return message{}, nil, errors.New("control: packet truncated")
	}
	var m message
	if err := json.Unmarshal(buf[:n], &m); err != nil {
		closeAll(fds)
		return message{}, nil, fmt.Errorf("control: decode: %w", err)
	}
	return m, fds, nil
}

func (c *ctrl) close() error {
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
			closeAll(fds)
			return nil, fmt.Errorf("control: parse rights: %w", err)
		}
		fds = append(fds, r...)
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}
