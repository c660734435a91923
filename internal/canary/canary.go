// Package canary is the host side of the start-up probes that every
// sandbox runs before its command (sandbox.ProbeRequest): a host file and
// a listener on the host's loopback that must both be out of the
// sandbox's reach. The probes from inside try to read the one and connect
// to the other; a connection the listener accepts is an escape signal.
//
// What reaches it: the sandbox's probes, which must fail to; and any
// local process, which can connect to the listener (a false alarm, never
// a miss: the count only grows) but cannot enter the 0700 directory of
// another user. Nothing is ever read from a connection or sent to it.
package canary

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/airlock-sandbox/airlock/sandbox"
)

// Canary is the host side of the start-up probes: a file and a TCP
// listener that exist on the host and must be unreachable from inside the
// sandbox. The file sits in a fresh directory that only its owner can
// enter (0700); the listener is on the host's loopback, which the
// sandbox's own network namespace cannot reach. Nothing is ever sent to
// the listener: it accepts, counts and closes, so that a connection from
// anywhere (the sandbox, if its network leaked) is seen.
type Canary struct {
	dir, file string
	lock      *os.File // flock'd while the canary lives (see sweepCanaries)
	lis       net.Listener
	accepted  atomic.Int64
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// New makes the canary file and listener. Close removes both.
//
// The file goes on a memory file system when the host has one this user
// may write ($XDG_RUNTIME_DIR, else /dev/shm), else in the system's
// temporary directory: making and removing it there costs tens of
// microseconds, where a journalled disk takes up to a millisecond. Both
// are host directories the sandbox never shows (it mounts its own /dev
// and /tmp).
func New() (*Canary, error) {
	return NewIn("", 0o700)
}

// canaryParents are where New tries to make the canary, in order;
// "" is the system's temporary directory.
func canaryParents() []string {
	var out []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		out = append(out, d)
	}
	return append(out, "/dev/shm", "")
}

// NewIn makes the canary under parent ("" for the first of the places
// New tries that works) with the given directory mode; tests use it to
// leave a hole open (a canary directory bound into the sandbox and
// readable).
func NewIn(parent string, mode os.FileMode) (*Canary, error) {
	parents := []string{parent}
	if parent == "" {
		parents = canaryParents()
	}
	var dir string
	var err error
	for _, p := range parents {
		sweepCanaries(p)
		if dir, err = os.MkdirTemp(p, canaryPrefix); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("canary: directory: %w", err)
	}
	lock, err := lockCanary(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("canary: lock: %w", err)
	}
	fail := func(what string, err error) (*Canary, error) {
		lock.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("canary: %s: %w", what, err)
	}
	if mode != 0o700 { // MkdirTemp makes it 0700
		if err := os.Chmod(dir, mode); err != nil {
			return fail("directory", err)
		}
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	file := filepath.Join(dir, "canary")
	if err := os.WriteFile(file, []byte("airlock canary "+hex.EncodeToString(tok[:])+"\n"), 0o600); err != nil {
		return fail("file", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail("listener", err)
	}
	c := &Canary{dir: dir, file: file, lock: lock, lis: lis, done: make(chan struct{})}
	go c.serve()
	return c, nil
}

// canaryPrefix names canary directories; canaryLock is the file in each
// that its owner holds an exclusive flock on while the canary lives.
const (
	canaryPrefix = "airlock-canary-"
	canaryLock   = ".owner"
)

// serve accepts and closes connections until the listener is closed.
func (c *Canary) serve() {
	defer close(c.done)
	for {
		conn, err := c.lis.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		c.accepted.Add(1)
		conn.Close()
	}
}

// Request is the probe request that names this canary.
func (c *Canary) Request() sandbox.ProbeRequest {
	return sandbox.ProbeRequest{CanaryFile: c.file, CanaryAddr: c.lis.Addr().String()}
}

// Dir is the canary's directory on the host.
func (c *Canary) Dir() string { return c.dir }

// Accepted counts the connections the canary listener accepted: anything
// above zero means something reached the host's loopback that should not
// have (the probe from inside the sandbox, or a stray local client).
func (c *Canary) Accepted() int64 { return c.accepted.Load() }

// Close closes the listener and removes the canary directory. It is safe
// to call more than once.
func (c *Canary) Close() error {
	c.closeOnce.Do(func() {
		lerr := c.lis.Close()
		<-c.done
		if lerr != nil && !errors.Is(lerr, net.ErrClosed) {
			c.closeErr = fmt.Errorf("canary: close the listener: %w", lerr)
		}
		// The file and its directory, and, should anything else have
		// appeared in the directory, that too.
		os.Remove(c.file)
		os.Remove(filepath.Join(c.dir, canaryLock))
		c.lock.Close()
		if err := os.Remove(c.dir); err != nil {
			if err := os.RemoveAll(c.dir); err != nil && c.closeErr == nil {
				c.closeErr = fmt.Errorf("canary: remove it: %w", err)
			}
		}
	})
	return c.closeErr
}

// Sweep removes the canary directories of airlock processes that died
// without removing them (their lock is free), from every place New makes
// them. A session's watchdog calls it when the session's holder dies.
func Sweep() {
	for _, p := range canaryParents() {
		sweepCanaries(p)
	}
}
