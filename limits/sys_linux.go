package limits

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// freezeTimeout bounds the wait for a freezer to report FROZEN; the
	// kill goes ahead after it.
	freezeTimeout = 2 * time.Second
	// killTimeout bounds KillAll.
	killTimeout = 10 * time.Second
	// roundWait is how long one kill round waits for the group to empty.
	roundWait = 200 * time.Millisecond
)

// errNoPermission marks a cgroup this user may not create: New falls back
// to rlimits instead of failing.
var errNoPermission = errors.New("no permission")

// classify wraps errNoPermission around the errors that mean "not for this
// user": EACCES, EPERM, EROFS.
func classify(err error) error {
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
		return fmt.Errorf("%w (%w)", err, errNoPermission)
	}
	return err
}

// readPids reads a cgroup.procs file.
func readPids(dir string) ([]int, error) {
	b, err := readBounded(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if p, err := strconv.Atoi(s.Text()); err == nil && p > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

// rmdirRetry removes a cgroup directory, retrying while the kernel still
// reports it busy (tasks that were just killed are still exiting).
func rmdirRetry(dir string) error {
	var err error
	for delay := time.Millisecond; delay < 500*time.Millisecond; delay *= 2 {
		err = unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(delay)
	}
	return &os.PathError{Op: "rmdir", Path: dir, Err: err}
}

// randomName returns 16 random hex digits.
func randomName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
