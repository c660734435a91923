//go:build linux || darwin

package holder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/holder/step"
)

// writeMsg sends v as one frame — a 4-byte big-endian length, then JSON —
// with files' descriptors attached to it (SCM_RIGHTS), in one sendmsg.
func writeMsg(c *net.UnixConn, v any, files ...*os.File) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(c, body, files...)
}

// writeFrame sends body, JSON, as one frame with files' descriptors.
func writeFrame(c *net.UnixConn, body []byte, files ...*os.File) error {
	frame := step.Frame(body)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	n, _, err := c.WriteMsgUnix(frame, oob, nil)
	if err != nil {
		return err
	}
	if n < len(frame) {
		_, err = c.Write(frame[n:])
	}
	return err
}

// writeManifest sends files, a manifest's, after an answer: in
// manifestParts of about partBytes each, every file in one.
func writeManifest(c *net.UnixConn, files []changes.FileChange) error {
	const open, end = `{"files":[`, `]}`
	body := []byte(open)
	for _, f := range files {
		b, err := json.Marshal(f)
		if err != nil {
			return err
		}
		if len(body) > len(open) && len(body)+len(b) > partBytes {
			if err := writeFrame(c, append(body, end...)); err != nil {
				return err
			}
			body = body[:len(open)]
		}
		if len(body) > len(open) {
			body = append(body, ',')
		}
		body = append(body, b...)
	}
	if len(body) > len(open) {
		return writeFrame(c, append(body, end...))
	}
	return nil
}

// readManifest reads the n files of a manifest that follow an answer.
func readManifest(c *net.UnixConn, n int) ([]changes.FileChange, error) {
	files := make([]changes.FileChange, 0, min(n, 1<<16))
	for len(files) < n {
		var part manifestPart
		fds, err := readMsg(c, &part, maxResponse)
		closeFiles(fds)
		switch {
		case err != nil:
			return files, err
		case len(part.Files) == 0 || len(part.Files) > n-len(files):
			return files, fmt.Errorf("holder: a part of %d files of a manifest of %d, %d read", len(part.Files), n, len(files))
		}
		files = append(files, part.Files...)
	}
	return files, nil
}

// readMsg reads one frame of at most limit bytes into v, and returns the
// descriptors that came with it as files (at most maxFDs; more, or a
// truncated control message, is an error and closes them all). It reads
// no byte past the frame: another may follow it (a manifest's parts after
// an answer, an opTerminate after an opStep).
func readMsg(c *net.UnixConn, v any, limit int) ([]*os.File, error) {
	var head [4]byte
	oob := make([]byte, unix.CmsgSpace(4*(maxFDs+1)))
	n, oobn, flags, _, err := c.ReadMsgUnix(head[:], oob)
	if err != nil {
		return nil, err
	}
	files, ferr := rights(oob[:oobn])
	fail := func(err error) ([]*os.File, error) {
		closeFiles(files)
		return nil, err
	}
	switch {
	case ferr != nil:
		return fail(ferr)
	case flags&unix.MSG_CTRUNC != 0 || len(files) > maxFDs:
		return fail(errors.New("holder: too many descriptors with a message"))
	case n < len(head):
		if _, err := io.ReadFull(c, head[n:]); err != nil {
			return fail(fmt.Errorf("holder: short message: %w", err))
		}
	}
	size := step.FrameSize(head)
	if size > limit {
		return fail(fmt.Errorf("holder: message of %d bytes is over the %d-byte limit", size, limit))
	}
	// Grown as the bytes come, not made at the size the header claims.
	var body bytes.Buffer
	if _, err := io.CopyN(&body, c, int64(size)); err != nil {
		return fail(fmt.Errorf("holder: short message: %w", err))
	}
	if err := json.Unmarshal(body.Bytes(), v); err != nil {
		return fail(fmt.Errorf("holder: bad message: %w", err))
	}
	return files, nil
}

// rights parses the descriptors of a control message into files.
func rights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("holder: control message: %w", err)
	}
	var files []*os.File
	var bad error
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			bad = fmt.Errorf("holder: control message: %w", err)
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(pollable(fd)), "holder-fd"))
		}
	}
	if bad != nil {
		closeFiles(files)
		return nil, bad
	}
	return files, nil
}

// kindsAre checks that every file is of one of the types modes (S_IFIFO
// for a step's streams; a patch may be a file, a pipe or a socket), and
// says which one is not: a directory, a device or a terminal is refused.
func kindsAre(files []*os.File, what string, modes ...uint32) error {
	for i, f := range files {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil || !slices.Contains(modes, uint32(st.Mode)&unix.S_IFMT) {
			return fmt.Errorf("holder: descriptor %d is not %s", i, what)
		}
	}
	return nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// control runs f on c's descriptor.
func control(c *net.UnixConn, f func(fd int) error) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
