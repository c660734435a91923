package main

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// applySeccomp installs a small filter on this thread: the x86-64 ABI
// only (any other, i386 or x32, kills), and EPERM for a few calls that
// airlock's filter refuses too (seccomp/);
// everything else allowed. airlock's filter is larger; its cost is in
// building it, not in one more prctl. Written by hand: the floor links
// no library but x/sys.
func applySeccomp() error {
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("seccomp: the floor's filter is for amd64, not %s", runtime.GOARCH)
	}
	denied := []uint32{
		unix.SYS_PTRACE, unix.SYS_KEXEC_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE,
		unix.SYS_DELETE_MODULE, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_UNSHARE, unix.SYS_SETNS,
		unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_SWAPON, unix.SYS_REBOOT,
	}
	n := uint8(len(denied))
	prog := []unix.SockFilter{
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 4), // seccomp_data.arch
		jump(unix.BPF_JEQ, unix.AUDIT_ARCH_X86_64, 0, n+4),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 0), // seccomp_data.nr
		jump(unix.BPF_JGE, 0x40000000, n+2, 0),       // x32
	}
	for i, nr := range denied {
		prog = append(prog, jump(unix.BPF_JEQ, nr, n-uint8(i), 0))
	}
	prog = append(prog,
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_KILL_PROCESS),
	)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(op uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k, Jt: jt, Jf: jf}
}

// applyLandlock restricts this thread: no file may be written, made or
// removed anywhere but under /dev (airlock's ruleset allows the workspace
// and a few more: sandbox/). Landlock ABI 1's
// write rights; reading and executing stay open, as the read-only root
// already bounds them.
func applyLandlock() error {
	const write = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	attr := unix.LandlockRulesetAttr{Handled_access_fs: write}
	rs, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock: create the ruleset: %w", errno)
	}
	defer unix.Close(int(rs))
	dev, err := unix.Open("/dev", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	defer unix.Close(dev)
	rule := unix.LandlockPathBeneathAttr{Allowed_access: unix.LANDLOCK_ACCESS_FS_WRITE_FILE, Parent_fd: int32(dev)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, rs, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock: add the /dev rule: %w", errno)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rs, 0, 0); errno != 0 {
		return fmt.Errorf("landlock: restrict: %w", errno)
	}
	return nil
}
