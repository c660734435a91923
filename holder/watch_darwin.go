package holder

import (
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// Where this process finds its own descriptors, and the longest path a
// unix socket may have (104 bytes with its NUL).
const (
	fdDir         = "/dev/fd"
	maxSocketPath = 103
)

// selfExe is airlock's own binary as the kernel started it; "" (the
// start then fails) when it cannot say.
func selfExe() string {
	p, _ := os.Executable()
	return p
}

// tornDown is how a dead holder's session ended, for the audit record.
const tornDown = "the watchdog killed the processes it left, and removed its private copies, probe canary and socket"

// becomeReaper does nothing: macOS has no subreaper; waitHolder follows
// the holder's processes instead.
func becomeReaper() error { return nil }

// waitHolder waits for the holder, reading the process table at each of
// its forks (kqueue's NOTE_FORK) and every second, and, when it exits,
// kills the processes it left (a step's: macOS has no parent-death
// signal), found by what the reads saw. A process born and reparented
// between two reads — a fork just as the holder dies, a double fork
// within a second — is not found: it stays under its step's profile and
// rlimits (docs/sessions.md, "macOS").
func waitHolder(cmd *exec.Cmd) {
	o := newOrphans(cmd.Process.Pid, seatbelt.UserProcs)
	o.read()
	kq, err := unix.Kqueue()
	if err == nil {
		defer unix.Close(kq)
		ev := []unix.Kevent_t{{Ident: uint64(cmd.Process.Pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD,
			Fflags: unix.NOTE_FORK | unix.NOTE_EXIT}}
		_, err = unix.Kevent(kq, ev, nil, nil)
	}
	second := unix.NsecToTimespec(int64(time.Second))
	for exited := err != nil; !exited; {
		var got [4]unix.Kevent_t
		n, err := unix.Kevent(kq, nil, got[:], &second)
		if err != nil && err != unix.EINTR {
			break
		}
		for _, e := range got[:max(n, 0)] {
			exited = exited || e.Fflags&unix.NOTE_EXIT != 0
		}
		o.read()
	}
	cmd.Wait()
	o.kill(time.Second)
}

// sweepSandboxes removes the private copies that the dead holder pid's
// sandboxes made in the temporary directory (package macbox): those of
// the sessions ids, and those a pool holder built (boxOf).
func sweepSandboxes(pid int, ids []string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "airlock-*"))
	for _, d := range dirs {
		if boxOf(filepath.Base(d), pid, ids) && ownDir(d) {
			os.RemoveAll(d)
		}
	}
}

// ownDir reports whether d is a directory of this user's, not a link.
func ownDir(d string) bool {
	var st unix.Stat_t
	return unix.Lstat(d, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == os.Geteuid()
}
