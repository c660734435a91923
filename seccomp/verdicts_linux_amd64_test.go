package seccomp

import (
	"testing"

	"github.com/airlock-sandbox/airlock/seccomp/internal/bpfvm"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// Return values of the filter, besides retErrno.
const (
	retAllow = uint32(unix.SECCOMP_RET_ALLOW)
	retKill  = uint32(unix.SECCOMP_RET_KILL_PROCESS)
)

// archX8664 is the audit arch of amd64, from the library rather than the
// generated program, so a wrong one there would show.
func archX8664() uint32 { return uint32(arch.X86_64.ID) }

func call(nr uintptr, args ...uint64) bpfvm.Data {
	d := bpfvm.Data{Nr: uint32(nr), Arch: archX8664(), IP: 0x401000}
	copy(d.Args[:], args)
	return d
}

func TestFilterVerdicts(t *testing.T) {
	requireAMD64(t)
	vm := newVM(t)
	const hi = 1 << 32 // bits above the 32 an int argument has
	allow, kill := retAllow, retKill
	eperm, enosys, eafnosupport := retErrno(unix.EPERM), retErrno(unix.ENOSYS), retErrno(unix.EAFNOSUPPORT)
	eacces, eprotonosupport := retErrno(unix.EACCES), retErrno(unix.EPROTONOSUPPORT)
	tests := []struct {
		name string
		in   bpfvm.Data
		want uint32
	}{
		// Ordinary work passes.
		{"read", call(unix.SYS_READ, 0, 0, 4096), allow},
		{"openat", call(unix.SYS_OPENAT, 0xffffffffffffff9c, 0, unix.O_RDONLY), allow},
		{"execve", call(unix.SYS_EXECVE), allow},
		{"clone thread", call(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|
			unix.CLONE_SIGHAND|unix.CLONE_THREAD|unix.CLONE_SYSVSEM|unix.CLONE_SETTLS), allow},
		{"clone fork", call(unix.SYS_CLONE, uint64(unix.SIGCHLD)), allow},
		{"clone vfork with pidfd", call(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_VFORK|unix.CLONE_PIDFD|uint64(unix.SIGCHLD)), allow},
		{"socket AF_INET stream", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC), allow},
		{"socket AF_INET6 dgram", call(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM), allow},
		{"socket AF_INET TCP", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, unix.IPPROTO_TCP), allow},
		{"socket AF_INET6 UDP", call(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP), allow},
		{"socket AF_INET high bits", call(unix.SYS_SOCKET, hi|unix.AF_INET, unix.SOCK_STREAM), allow},
		{"socket AF_INET protocol high bits", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, hi|unix.IPPROTO_TCP), allow},
		{"socketpair AF_UNIX", call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM), allow},
		{"socketpair AF_UNIX seqpacket", call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC), allow},
		{"socketpair AF_UNIX dgram", call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_DGRAM), allow},
		{"ioctl TCGETS", call(unix.SYS_IOCTL, 0, unix.TCGETS), allow},
		{"ioctl TIOCGWINSZ", call(unix.SYS_IOCTL, 1, unix.TIOCGWINSZ), allow},
		{"personality query", call(unix.SYS_PERSONALITY, 0xffffffff), allow},
		{"personality PER_LINUX", call(unix.SYS_PERSONALITY, 0), allow},
		{"personality PER_LINUX32", call(unix.SYS_PERSONALITY, 0x8), allow},
		{"seccomp (nesting only narrows)", call(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER), allow},
		{"landlock_restrict_self", call(unix.SYS_LANDLOCK_RESTRICT_SELF), allow},
		{"removexattrat, near the top of the table", call(466), allow},
		{"open_tree_attr, the top of the table", call(467), eperm},

		// Foreign architectures and x32 are killed, whatever the number.
		{"i386 getpid (int 0x80)", bpfvm.Data{Nr: 20, Arch: unix.AUDIT_ARCH_I386}, kill},
		{"i386 socketcall", bpfvm.Data{Nr: 102, Arch: unix.AUDIT_ARCH_I386, Args: [6]uint64{1}}, kill},
		{"i386 nr 0", bpfvm.Data{Nr: 0, Arch: unix.AUDIT_ARCH_I386}, kill},
		{"aarch64 read", bpfvm.Data{Nr: 63, Arch: unix.AUDIT_ARCH_AARCH64}, kill},
		{"arm openat", bpfvm.Data{Nr: 322, Arch: unix.AUDIT_ARCH_ARM}, kill},
		{"arch 0", bpfvm.Data{Nr: 0, Arch: 0}, kill},
		{"x32 getpid", call(x32SyscallBit | unix.SYS_GETPID), kill},
		{"x32 read", call(x32SyscallBit | unix.SYS_READ), kill},
		{"x32 ptrace", call(x32SyscallBit | 521), kill},
		{"x32 bit alone", call(x32SyscallBit), kill},
		{"nr 0xfffffffe", call(0xfffffffe), kill},

		// Numbers the table does not know fail as an older kernel would.
		{"nr -1 (no call)", call(0xffffffff), enosys},
		{"first number after the table", call(468), enosys},
		{"just below the x32 bit", call(x32SyscallBit - 1), enosys},

		// Argument rules.
		{"clone CLONE_NEWUSER", call(unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), eperm},
		{"clone CLONE_NEWNS", call(unix.SYS_CLONE, unix.CLONE_NEWNS), eperm},
		{"clone CLONE_NEWPID", call(unix.SYS_CLONE, unix.CLONE_NEWPID|unix.CLONE_VFORK|unix.CLONE_VM), eperm},
		{"clone CLONE_NEWNET", call(unix.SYS_CLONE, unix.CLONE_NEWNET), eperm},
		{"clone CLONE_NEWIPC", call(unix.SYS_CLONE, unix.CLONE_NEWIPC), eperm},
		{"clone CLONE_NEWUTS", call(unix.SYS_CLONE, unix.CLONE_NEWUTS), eperm},
		{"clone CLONE_NEWCGROUP", call(unix.SYS_CLONE, unix.CLONE_NEWCGROUP), eperm},
		{"clone3", call(unix.SYS_CLONE3), enosys},
		{"ioctl TIOCSTI", call(unix.SYS_IOCTL, 0, unix.TIOCSTI), eperm},
		{"ioctl TIOCSTI high bits", call(unix.SYS_IOCTL, 0, hi|unix.TIOCSTI), eperm},
		{"ioctl TIOCSTI all high bits", call(unix.SYS_IOCTL, 0, 0xffffffff_00000000|unix.TIOCSTI), eperm},
		{"ioctl TIOCLINUX", call(unix.SYS_IOCTL, 0, unix.TIOCLINUX), eperm},
		{"sendto MSG_FASTOPEN", call(unix.SYS_SENDTO, 3, 0, 0, unix.MSG_FASTOPEN), eperm},
		{"sendto MSG_FASTOPEN|MSG_NOSIGNAL", call(unix.SYS_SENDTO, 3, 0, 0, unix.MSG_FASTOPEN|unix.MSG_NOSIGNAL), eperm},
		{"sendmsg MSG_FASTOPEN", call(unix.SYS_SENDMSG, 3, 0, unix.MSG_FASTOPEN), eperm},
		{"sendmmsg MSG_FASTOPEN", call(unix.SYS_SENDMMSG, 3, 0, 1, unix.MSG_FASTOPEN), eperm},
		{"sendto MSG_NOSIGNAL", call(unix.SYS_SENDTO, 3, 0, 0, unix.MSG_NOSIGNAL), allow},
		{"sendmsg plain", call(unix.SYS_SENDMSG, 3, 0, 0), allow},
		{"socket AF_NETLINK", call(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), eafnosupport},
		{"socket AF_NETLINK dgram", call(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_DGRAM), eafnosupport},
		{"socket AF_NETLINK high bits", call(unix.SYS_SOCKET, hi|unix.AF_NETLINK, unix.SOCK_RAW), eafnosupport},
		{"socket AF_PACKET", call(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), eafnosupport},
		{"socket AF_KEY", call(unix.SYS_SOCKET, unix.AF_KEY, unix.SOCK_RAW), eafnosupport},
		{"socket AF_BLUETOOTH", call(unix.SYS_SOCKET, unix.AF_BLUETOOTH, unix.SOCK_STREAM), eafnosupport},
		{"socket AF_VSOCK", call(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), eafnosupport},
		{"socket AF_ALG", call(unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET), eafnosupport},
		{"socket AF_RDS", call(unix.SYS_SOCKET, unix.AF_RDS, unix.SOCK_SEQPACKET), eafnosupport},
		{"socket AF_UNSPEC", call(unix.SYS_SOCKET, unix.AF_UNSPEC, unix.SOCK_STREAM), eafnosupport},
		{"socket AF_INET SOCK_RAW", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), eperm},
		{"socket AF_INET6 SOCK_RAW|CLOEXEC", call(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC), eperm},
		{"socket AF_INET SOCK_PACKET", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_PACKET), eperm},
		{"socket AF_INET SOCK_RAW high bits", call(unix.SYS_SOCKET, unix.AF_INET, hi|unix.SOCK_RAW), eperm},
		{"socket AF_INET MPTCP", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), eprotonosupport},
		{"socket AF_INET6 MPTCP|NONBLOCK|CLOEXEC", call(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP), eprotonosupport},
		{"socket MPTCP high bits", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, hi|unix.IPPROTO_MPTCP), eprotonosupport},
		{"socket SCTP stream", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP), eprotonosupport},
		{"socket SCTP seqpacket", call(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_SEQPACKET, 0), eprotonosupport},
		{"socket UDP-Lite", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDPLITE), eprotonosupport},
		{"socket ICMP ping", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), eprotonosupport},
		{"socket TCP over dgram", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_TCP), eprotonosupport},
		{"socket UDP over stream", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_UDP), eprotonosupport},
		{"socket DCCP", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DCCP, unix.IPPROTO_DCCP), eprotonosupport},
		{"socket AF_UNIX stream", call(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK), eacces},
		{"socket AF_UNIX dgram", call(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_DGRAM), eacces},
		{"socket AF_UNIX seqpacket high bits", call(unix.SYS_SOCKET, hi|unix.AF_UNIX, unix.SOCK_SEQPACKET), eacces},
		{"socketpair AF_NETLINK", call(unix.SYS_SOCKETPAIR, unix.AF_NETLINK, unix.SOCK_RAW), eafnosupport},
		{"socketpair AF_INET", call(unix.SYS_SOCKETPAIR, unix.AF_INET, unix.SOCK_STREAM), eafnosupport},
		{"personality ADDR_NO_RANDOMIZE", call(unix.SYS_PERSONALITY, 0x0040000), eperm},
		{"personality READ_IMPLIES_EXEC", call(unix.SYS_PERSONALITY, 0x0400000), eperm},
		{"personality PER_SVR4", call(unix.SYS_PERSONALITY, 0x0001|0x04000000), eperm},
		{"personality high bits on a refused value", call(unix.SYS_PERSONALITY, hi|0x0040000), eperm},

		// Name rules, with numbers from x/sys rather than the library's
		// table, so a wrong table would show.
		{"ptrace", call(unix.SYS_PTRACE, unix.PTRACE_TRACEME), eperm},
		{"process_vm_readv", call(unix.SYS_PROCESS_VM_READV), eperm},
		{"process_vm_writev", call(unix.SYS_PROCESS_VM_WRITEV), eperm},
		{"pidfd_getfd", call(unix.SYS_PIDFD_GETFD), eperm},
		{"kexec_load", call(unix.SYS_KEXEC_LOAD), eperm},
		{"kexec_file_load", call(unix.SYS_KEXEC_FILE_LOAD), eperm},
		{"init_module", call(unix.SYS_INIT_MODULE), eperm},
		{"finit_module", call(unix.SYS_FINIT_MODULE), eperm},
		{"delete_module", call(unix.SYS_DELETE_MODULE), eperm},
		{"bpf", call(unix.SYS_BPF), eperm},
		{"perf_event_open", call(unix.SYS_PERF_EVENT_OPEN), eperm},
		{"userfaultfd", call(unix.SYS_USERFAULTFD), eperm},
		{"add_key", call(unix.SYS_ADD_KEY), eperm},
		{"request_key", call(unix.SYS_REQUEST_KEY), eperm},
		{"keyctl", call(unix.SYS_KEYCTL), eperm},
		{"mount", call(unix.SYS_MOUNT), eperm},
		{"umount2", call(unix.SYS_UMOUNT2), eperm},
		{"move_mount", call(unix.SYS_MOVE_MOUNT), eperm},
		{"open_tree", call(unix.SYS_OPEN_TREE), eperm},
		{"fsopen", call(unix.SYS_FSOPEN), eperm},
		{"fsmount", call(unix.SYS_FSMOUNT), eperm},
		{"fsconfig", call(unix.SYS_FSCONFIG), eperm},
		{"fspick", call(unix.SYS_FSPICK), eperm},
		{"mount_setattr", call(unix.SYS_MOUNT_SETATTR), eperm},
		{"pivot_root", call(unix.SYS_PIVOT_ROOT), eperm},
		{"chroot", call(unix.SYS_CHROOT), eperm},
		{"unshare", call(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), eperm},
		{"unshare no flags", call(unix.SYS_UNSHARE, 0), eperm},
		{"setns", call(unix.SYS_SETNS), eperm},
		{"io_uring_setup", call(unix.SYS_IO_URING_SETUP), enosys},
		{"io_uring_enter", call(unix.SYS_IO_URING_ENTER), enosys},
		{"io_uring_register", call(unix.SYS_IO_URING_REGISTER), enosys},
		{"reboot", call(unix.SYS_REBOOT), eperm},
		{"swapon", call(unix.SYS_SWAPON), eperm},
		{"swapoff", call(unix.SYS_SWAPOFF), eperm},
		{"settimeofday", call(unix.SYS_SETTIMEOFDAY), eperm},
		{"clock_settime", call(unix.SYS_CLOCK_SETTIME), eperm},
		{"clock_adjtime", call(unix.SYS_CLOCK_ADJTIME), eperm},
		{"adjtimex", call(unix.SYS_ADJTIMEX), eperm},
		{"acct", call(unix.SYS_ACCT), eperm},
		{"quotactl", call(unix.SYS_QUOTACTL), eperm},
		{"lookup_dcookie", call(unix.SYS_LOOKUP_DCOOKIE), eperm},
		{"open_by_handle_at", call(unix.SYS_OPEN_BY_HANDLE_AT), eperm},
		{"syslog", call(unix.SYS_SYSLOG), eperm},
		{"uselib", call(unix.SYS_USELIB), eperm},
		{"ustat", call(unix.SYS_USTAT), eperm},
		{"sysfs", call(unix.SYS_SYSFS), eperm},
		{"vhangup", call(unix.SYS_VHANGUP), eperm},
		{"nfsservctl", call(unix.SYS_NFSSERVCTL), eperm},
		{"iopl", call(unix.SYS_IOPL), eperm},
		{"ioperm", call(unix.SYS_IOPERM), eperm},
		{"create_module", call(unix.SYS_CREATE_MODULE), eperm},
		{"get_kernel_syms", call(unix.SYS_GET_KERNEL_SYMS), eperm},
		{"query_module", call(unix.SYS_QUERY_MODULE), eperm},
		{"name_to_handle_at stays allowed", call(unix.SYS_NAME_TO_HANDLE_AT), allow},
	}
	for _, tc := range tests {
		if got := bpfvm.Run(t, vm, tc.in); got != tc.want {
			t.Errorf("%s: nr %d arch %#x args %#x: filter returns %s, want %s",
				tc.name, tc.in.Nr, tc.in.Arch, tc.in.Args[:3], bpfvm.ActionName(got), bpfvm.ActionName(tc.want))
		}
	}
}
