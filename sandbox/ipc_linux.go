package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/limits"
	"golang.org/x/sys/unix"
)

// SysV IPC (docs/sandbox.md, "Caps"): the sandbox has an IPC namespace of
// its own, but the kernel's defaults there let it make some 32,000
// message queues of 16 KiB (kernel memory) and shared memory segments
// without bound, which outlive the processes that made them: memory that
// no process maps, so no process's memory limit counts. Rootful, before
// anything runs inside, the parent sets the namespace's limits from the
// run's caps: shared memory in all no more than the memory cap, segments
// destroyed once no process has them attached (shm_rmid_forced), a few
// small message queues and semaphore sets. The files of an IPC namespace
// are written from a thread that has joined it, and only by a writer that
// is root outside it (uid 0 is not mapped inside); a rootless parent is
// neither. Where the parent cannot set them, a memory cgroup still counts
// what SysV IPC keeps; where there is none (rootless without a delegated
// memory controller), the init refuses SysV IPC altogether
// (Config.NoMemoryCgroup: shmget, msgget and semget fail with ENOSYS),
// and UDP sockets, whose unread datagrams nothing counts either.

// ipcLimits are the sysctls of the sandbox's IPC namespace for caps of
// memory bytes, in the order written.
func ipcLimits(memory int64) [][2]string {
	if memory <= 0 {
		memory = 1 << 30
	}
	page := int64(os.Getpagesize())
	return [][2]string{
		{"shm_rmid_forced", "1"},
		{"shmmax", strconv.FormatInt(memory, 10)},
		{"shmall", strconv.FormatInt(memory/page, 10)},
		{"shmmni", "64"},
		{"msgmni", "16"},
		{"msgmnb", "16384"},
		{"msgmax", "8192"},
		// SEMMSL, SEMMNS, SEMOPM, SEMMNI
		{"sem", "250 4096 32 128"},
	}
}

// boundIPC sets the limits of the init's IPC namespace, rootful, and
// returns the receipt's words.
func (s *Sandbox) boundIPC() (string, error) {
	switch {
	case s.noMemcg():
		return "refused: shmget, msgget and semget fail with ENOSYS (no memory cgroup)", nil
	case os.Geteuid() != 0:
		return "the kernel's defaults, counted by the memory cgroup: a rootless parent cannot set the IPC namespace's limits", nil
	case s.hole.ID() == 0:
		// uid 0 is mapped inside, and so owns the namespace's files.
		return "the kernel's defaults: test hole uid", nil
	}
	lim := ipcLimits(s.cfg.Caps.MemoryBytes)
	if err := inIPCNamespace(s.cmd.Process.Pid, func() error {
		for _, kv := range lim {
			if err := os.WriteFile("/proc/sys/kernel/"+kv[0], []byte(kv[1]), 0); err != nil {
				return err
			}
		}
		return nil
	}); errors.Is(err, errIPCJoin) && errors.Is(err, unix.EPERM) {
		// Root without CAP_SYS_ADMIN in its own user namespace: inside a
		// container (setns needs it there as well as in the target's).
		return "the kernel's defaults: airlock lacks CAP_SYS_ADMIN to join the sandbox's IPC namespace (inside a container; SysV IPC is bounded by the memory cgroup, when there is one)", nil
	} else if err != nil {
		return "", fmt.Errorf("sandbox: bound SysV IPC: %w", err)
	}
	words := make([]string, len(lim))
	for i, kv := range lim {
		words[i] = kv[0] + "=" + kv[1]
	}
	return "the IPC namespace's limits: " + strings.Join(words, ", "), nil
}

// noMemcg reports whether the sandbox has no memory cgroup: the init then
// refuses SysV IPC and UDP sockets (Config.NoMemoryCgroup).
func (s *Sandbox) noMemcg() bool { return !s.group.Provides(limits.RequireCgroupMemory) }

// errIPCJoin is matched by inIPCNamespace's error when the thread could
// not join the namespace.
var errIPCJoin = errors.New("join the init's IPC namespace")

// inIPCNamespace runs f on a thread that has joined the IPC namespace of
// process pid, and goes back to its own after. The thread is never let
// exit: a thread that exits SIGKILLs every child it forked with
// Pdeathsig, and the Go runtime may have forked a sandbox's init on it.
// One that cannot go back to its own namespace is parked for good
// instead (its goroutine blocks, locked to it), never reused.
func inIPCNamespace(pid int, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := unix.Open("/proc/thread-self/ns/ipc", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread() // nothing changed on the thread
			errc <- err
			return
		}
		defer unix.Close(own)
		theirs, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/ipc", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open the init's IPC namespace: %w", err)
			return
		}
		err = unix.Setns(theirs, unix.CLONE_NEWIPC)
		unix.Close(theirs)
		if err != nil {
			runtime.UnlockOSThread() // a refused setns changes nothing
			errc <- fmt.Errorf("%w: %w", errIPCJoin, err)
			return
		}
		err = f()
		if unix.Setns(own, unix.CLONE_NEWIPC) != nil {
			errc <- errors.Join(err, errors.New("sandbox: a thread could not leave the sandbox's IPC namespace: parked"))
			select {} // parked: neither reused nor exited
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}
