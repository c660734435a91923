package limits

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testCaps are roomy caps; each test tightens the one it bombs.
func testCaps() Caps {
	return Caps{
		Wall:           60 * time.Second,
		CPU:            30 * time.Second,
		MemoryBytes:    256 << 20,
		Tasks:          64,
		DiskWriteBytes: 64 << 20,
		OpenFiles:      256,
		OutputBytes:    16 << 20,
	}
}

// testName is unique per test run: other engineers test on this host too.
func testName(t testing.TB) string {
	return fmt.Sprintf("test%d-%s", os.Getpid(), randomName()[:8])
}

// newTestGroup makes a group on l (the host's when nil) and, at cleanup,
// deletes it and asserts that none of its directories is left.
func newTestGroup(t testing.TB, caps Caps, l *layout) *Group {
	t.Helper()
	g, err := newGroup(caps, Options{Name: testName(t)}, l)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	dirs := g.sys.dirs()
	t.Cleanup(func() {
		if err := g.Delete(); err != nil {
			t.Errorf("Delete: %v", err)
		}
		assertGone(t, dirs)
	})
	return g
}

// assertGone fails the test for every directory that still exists.
func assertGone(t testing.TB, dirs []string) {
	t.Helper()
	for _, d := range dirs {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("residue: %s still exists (%v)", d, err)
		}
	}
}

// child is a payload process placed in a group.
type child struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

type startOpt struct {
	noDirFD   bool // place by cgroup.procs only, not CLONE_INTO_CGROUP
	noPlace   bool // CLONE_INTO_CGROUP only
	noRlimits bool
}

// start runs payload with args, places it in g while it waits at its gate,
// then opens the gate.
func start(t *testing.T, g *Group, payload string, o startOpt, args ...string) *child {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := &child{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	rl := []byte{}
	if !o.noRlimits {
		rl, _ = json.Marshal(g.Rlimits())
	}
	c.cmd.Env = append(os.Environ(), envPayload+"="+payload, envRlimits+"="+string(rl))
	c.cmd.ExtraFiles = []*os.File{r}
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if fd, ok := g.Dir(); ok && !o.noDirFD {
		c.cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	}
	if err := c.cmd.Start(); err != nil {
		r.Close()
		t.Fatalf("start %s: %v", payload, err)
	}
	r.Close()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	if !o.noPlace {
		if err := g.Place(c.cmd.Process.Pid); err != nil {
			t.Fatalf("Place: %v", err)
		}
	}
	if _, err := w.Write([]byte{1}); err != nil {
		t.Fatalf("open gate: %v (stderr %q)", err, c.stderr.String())
	}
	return c
}

// wait waits for the child to exit, failing the test after timeout.
func (c *child) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(timeout):
		t.Fatalf("child %d did not exit in %v", c.cmd.Process.Pid, timeout)
	}
}

// signal returns the signal the child died of, or 0.
func (c *child) signal() syscall.Signal {
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0
	}
	return ws.Signal()
}

// watcher runs g.Watch until stopped.
type watcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	killed chan KilledBy
}

func watch(g *Group) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{cancel: cancel, done: make(chan struct{}), killed: make(chan KilledBy, 1)}
	go func() {
		defer close(w.done)
		g.Watch(ctx, func(k KilledBy) { w.killed <- k })
	}()
	return w
}

// stop ends the watch (after its final check) and returns what it saw.
func (w *watcher) stop() {
	w.cancel()
	<-w.done
}

// tripped waits until the watch kills the group, failing after timeout.
func (w *watcher) tripped(t *testing.T, timeout time.Duration) KilledBy {
	t.Helper()
	select {
	case k := <-w.killed:
		<-w.done
		return k
	case <-time.After(timeout):
		w.stop()
		t.Fatalf("no cap tripped in %v", timeout)
		return ""
	}
}

// requireEmpty fails unless the group holds no process.
func requireEmpty(t *testing.T, g *Group) {
	t.Helper()
	pop, pids, err := g.sys.populated()
	if err != nil || pop {
		t.Fatalf("group not empty: pids %v, err %v", pids, err)
	}
}

// pidfdExited waits for the process behind fd to exit.
func pidfdExited(fd int, timeout time.Duration) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, int(timeout/time.Millisecond))
	return err == nil && n == 1
}

// inGroup reports whether /proc/pid/cgroup names the group's directory.
func inGroup(pid int, g *Group) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && strings.Contains(string(b), "airlock-"+g.name)
}
