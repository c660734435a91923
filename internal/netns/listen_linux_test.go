package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// newNetns makes a network namespace with lo up, as the exported script
// does, and removes it when the test ends.
func newNetns(t *testing.T) string {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireCommands(t, "ip")
	name := fmt.Sprintf("airlock-netns-test-%d", os.Getpid())
	for _, args := range [][]string{{"netns", "add", name}, {"-n", name, "link", "set", "lo", "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete: %v: %s", err, out)
		}
	})
	return "/run/netns/" + name
}

// dialIn connects to addr from inside the namespace at path.
func dialIn(t *testing.T, path, addr string) (net.Conn, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type res struct {
		c   net.Conn
		err error
	}
	done := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- res{err: err}
			return
		}
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		done <- res{c, err}
	}()
	r := <-done
	return r.c, r.err
}

// TestListenInside checks that the listener lives in the namespace: a
// client inside reaches it, one in the test's own namespace does not, and
// the calling goroutine's thread is back in its own namespace.
func TestListenInside(t *testing.T) {
	path := newNetns(t)
	ln, err := Listen(context.Background(), path, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("inside\n"))
			c.Close()
		}
	}()
	c, err := dialIn(t, path, ln.Addr().String())
	if err != nil {
		t.Fatalf("dial from inside the namespace: %v", err)
	}
	buf := make([]byte, 7)
	if _, err := c.Read(buf); err != nil || string(buf) != "inside\n" {
		t.Errorf("read %q, %v", buf, err)
	}
	c.Close()
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Errorf("%s is reachable from the host's namespace", ln.Addr())
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Logf("dial from the host: %v", err)
	}
}

// TestListenNotANamespace checks that a file that is not a network
// namespace is refused with the path in the error, and a missing one too.
func TestListenNotANamespace(t *testing.T) {
	testutil.RequireRoot(t)
	for _, path := range []string{"/etc/hostname", "/proc/self/ns/mnt", t.TempDir() + "/missing"} {
		ln, err := Listen(context.Background(), path, "tcp", "127.0.0.1:0")
		if err == nil {
			ln.Close()
			t.Errorf("Listen in %s succeeded", path)
		}
	}
}

// TestListenParksAStrandedThread checks that a thread that could not go
// back to its own namespace is kept, not ended: a thread that exits
// SIGKILLs the children forked on it with Pdeathsig (a sandbox's init).
func TestListenParksAStrandedThread(t *testing.T) {
	path := newNetns(t)
	tids := make(chan int, 1)
	calls := 0
	setns = func(fd, nstype int) error {
		calls++
		if calls == 2 {
			tids <- unix.Gettid()
			return unix.EPERM
		}
		return unix.Setns(fd, nstype)
	}
	defer func() { setns = unix.Setns }()
	if ln, err := Listen(context.Background(), path, "tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
		t.Fatal("Listen succeeded though the way back failed")
	}
	tid := <-tids
	time.Sleep(200 * time.Millisecond) // the runtime ends a locked thread as its goroutine returns
	runtime.GC()
	if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); err != nil {
		t.Fatalf("the stranded thread %d was ended: %v", tid, err)
	}
}
