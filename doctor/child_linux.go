package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/reexec"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// The doctor's children are this binary, re-executed (internal/reexec): a
// container image may hold airlock alone, with no true(1) to run.
const childArg0 = "airlock-doctor-probe"

// Exit statuses of a child's probe.
const (
	childOK          = 0
	childProcRefused = 3 // a fresh proc mount refused with EPERM
	childFailed      = 4
)

// init runs a doctor's child and exits, before anything else of the
// binary runs but the initialisers of the packages the doctor imports.
func init() {
	if !reexec.Is(childArg0) || len(os.Args) != 2 {
		return
	}
	os.Exit(runChild(os.Args[1]))
}

// runChild does one probe in the child: "true" nothing; "proc" mounts a
// fresh proc over /proc of its new mount namespace (made private first);
// "seccomp" installs airlock's two filters on top of whatever this
// process runs under.
func runChild(what string) int {
	switch what {
	case "true":
		return childOK
	case "proc":
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			fmt.Fprintln(os.Stderr, "make / private:", err)
			return childFailed
		}
		err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		switch {
		case errors.Is(err, unix.EPERM):
			return childProcRefused
		case err != nil:
			fmt.Fprintln(os.Stderr, "mount proc:", err)
			return childFailed
		}
		return childOK
	case "seccomp":
		if err := seccomp.Install(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return childFailed
		}
		if err := seccomp.InstallNoNetNS(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return childFailed
		}
		return childOK
	}
	return childFailed
}

// runSelf runs this binary as a doctor's child doing what, with attr.
func runSelf(ctx context.Context, what string, attr *syscall.SysProcAttr) error {
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{childArg0, what}
	cmd.Env = []string{reexec.Mark(childArg0)}
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == childProcRefused:
		return errProcRefused
	case err != nil && len(out) > 0:
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return err
}

// procProbe mounts a fresh proc in new user, mount and pid namespaces, as
// the sandbox's init does.
func procProbe(ctx context.Context) error {
	return runSelf(ctx, "proc", nsAttr(unix.CLONE_NEWUSER|unix.CLONE_NEWNS|unix.CLONE_NEWPID))
}

// seccompProbe installs airlock's filters in a child.
func seccompProbe(ctx context.Context) error { return runSelf(ctx, "seccomp", nil) }

// nsAttr is the child's attributes for new namespaces flags: with a user
// namespace, the caller is root inside and uses a capability there.
func nsAttr(flags uintptr) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Cloneflags: flags}
	if flags&unix.CLONE_NEWUSER != 0 {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// chroot needs CAP_SYS_CHROOT in the new namespace: it fails
		// where the namespace is created but stripped of capabilities.
		attr.Chroot = "/"
	}
	return attr
}
