package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// initMain is the sandbox's init, pid 1 of the new pid namespace, as
// airlock's (sandbox/internal/initproc): it builds the root, waits for the
// front's go-ahead on fd 3, drops every privilege, runs the command as its
// child and exits with its status once it has ended (docs/sandbox.md,
// "Signals to the init").
func initMain(args []string) int {
	var seccomp, landlock, session, tasks, gate bool
	for len(args) > 0 && args[0] != "--" {
		switch args[0] {
		case "-seccomp":
			seccomp = true
		case "-landlock":
			landlock = true
		case "-steps":
			session = true
		case "-tasks":
			tasks = true
		case "-gate":
			gate = true
		default:
			fmt.Fprintln(os.Stderr, "floor-init: unknown flag", args[0])
			return 125
		}
		args = args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "floor-init: no command")
		return 125
	}
	code, err := sandboxInit(args[1:], seccomp, landlock, session, tasks, gate)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor-init:", err)
		return 125
	}
	return code
}

// sandboxInit builds the sandbox, waits for the go-ahead, and runs argv
// once, or, for -steps (session), a step of it on each request (with
// tasks, in the step's group: serveSteps).
func sandboxInit(argv []string, seccomp, landlock, session, tasks, gate bool) (int, error) {
	if err := buildRoot(); err != nil {
		return 0, err
	}
	var b [1]byte
	n, err := unix.Read(3, b[:])
	if n != 1 {
		return 0, fmt.Errorf("no go-ahead from the front (%d bytes, %v)", n, err)
	}
	if !session {
		unix.Close(3)
	}
	if err := dropPrivileges(); err != nil {
		return 0, err
	}
	if landlock {
		if err := applyLandlock(); err != nil {
			return 0, err
		}
	}
	if seccomp {
		if err := applySeccomp(); err != nil {
			return 0, err
		}
	}
	// Forked from this thread (locked in init), which holds the
	// credentials, no_new_privs, filter and ruleset set above.
	if session {
		return serveSteps(argv, tasks, gate)
	}
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		return 0, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	return reap(pid)
}

// reap reaps whatever ends, as pid 1, until pid has, and returns its
// status (128+N for signal N).
func reap(pid int) (int, error) {
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("wait: %w", err)
		}
		if wpid == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal()), nil
			}
			return ws.ExitStatus(), nil
		}
	}
}

// buildRoot makes the root bwrap's --ro-bind / / --proc /proc --dev /dev
// make: the host's tree cloned, recursively read-only, nosuid and nodev;
// a fresh /proc with bwrap's four read-only covers; a tmpfs /dev with six
// device nodes bound from the host, its links, shm and a devpts of its
// own; then pivot_root into it and detach the host's tree (airlock:
// sandbox/internal/initproc/rootfs_linux.go; docs/sandbox.md, "The view").
func buildRoot() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("clone /: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("make the clone of / read-only: %w", err)
	}
	// A base to attach the clone to, as bwrap's: a tmpfs over /tmp, in
	// this mount namespace only (the clone was taken before it).
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return fmt.Errorf("mount the base: %w", err)
	}
	const root = "/tmp/root"
	if err := unix.Mkdir(root, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", root, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, root, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach the clone of /: %w", err)
	}
	if err := unix.Mount("proc", root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, d := range []string{"sys", "sysrq-trigger", "irq", "bus"} {
		p := root + "/proc/" + d
		if err := unix.Mount(p, p, "", unix.MS_BIND, ""); errors.Is(err, unix.ENOENT) {
			continue
		} else if err != nil {
			return fmt.Errorf("cover /proc/%s: %w", d, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, p, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil {
			return fmt.Errorf("cover /proc/%s: %w", d, err)
		}
	}
	if err := buildDev(root + "/dev"); err != nil {
		return err
	}
	// pivot_root(".", ".") stacks the old root under the new one; the
	// detach drops it, so no path leads back to the host's tree.
	if err := unix.Chdir(root); err != nil {
		return fmt.Errorf("chdir %s: %w", root, err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	return nil
}

// buildDev makes bwrap's --dev at dev.
func buildDev(dev string) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		fd, err := unix.Open(dev+"/"+n, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o666)
		if err != nil {
			return fmt.Errorf("make /dev/%s: %w", n, err)
		}
		unix.Close(fd)
		if err := unix.Mount("/dev/"+n, dev+"/"+n, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	for _, l := range [][2]string{
		{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
		{"/proc/self/fd/2", "stderr"}, {"/proc/kcore", "core"}, {"pts/ptmx", "ptmx"},
	} {
		if err := unix.Symlink(l[0], dev+"/"+l[1]); err != nil {
			return fmt.Errorf("link /dev/%s: %w", l[1], err)
		}
	}
	for _, d := range []string{"shm", "pts"} {
		if err := unix.Mkdir(dev+"/"+d, 0o755); err != nil {
			return fmt.Errorf("mkdir /dev/%s: %w", d, err)
		}
	}
	if err := unix.Mount("devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"); err != nil {
		return fmt.Errorf("mount /dev/pts: %w", err)
	}
	return nil
}

// dropPrivileges sets no_new_privs and drops every capability from the
// bounding set and the thread's sets, so that the command, exec'd as uid
// 0 of the user namespace, gains none (as bwrap and airlock do).
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	for c := 0; ; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) && c > 0 {
			break // past the last capability this kernel has
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
