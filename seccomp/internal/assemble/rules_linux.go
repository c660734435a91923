package assemble

import "golang.org/x/sys/unix"

// The values below come from the generating host's golang.org/x/sys/unix.
// They are the same on every architecture in GOARCHes (the asm-generic
// errno, ioctl, socket and clone numbers); an architecture with its own
// values (mips, ppc, sparc, alpha) would need them per target.

// nameRule refuses every call to the named syscalls with errno.
type nameRule struct {
	names []string
	errno unix.Errno
	why   string
}

// nameRules are the unconditional refusals, assembled by the library, in
// the order of the filter and of the receipt.
var nameRules = []nameRule{
	{
		names: []string{"ptrace", "process_vm_readv", "process_vm_writev",
			"process_madvise", "pidfd_getfd", "kcmp"},
		errno: unix.EPERM,
		why:   "reads or controls another process's memory, files or state",
	},
	{
		names: []string{"kexec_load", "kexec_file_load", "reboot"},
		errno: unix.EPERM,
		why:   "replaces or stops the running kernel",
	},
	{
		names: []string{"init_module", "finit_module", "delete_module",
			"create_module", "get_kernel_syms", "query_module"},
		errno: unix.EPERM,
		why:   "loads or unloads kernel code",
	},
	{
		names: []string{"bpf", "perf_event_open", "userfaultfd"},
		errno: unix.EPERM,
		why:   "kernel attack surface (eBPF, perf, fault handling) that most local privilege escalations use",
	},
	{
		names: []string{"add_key", "request_key", "keyctl"},
		errno: unix.EPERM,
		why:   "the kernel keyrings are not namespaced: they are shared with the host",
	},
	{
		names: []string{"mount", "umount2", "move_mount", "open_tree", "open_tree_attr",
			"fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
			"pivot_root", "chroot"},
		errno: unix.EPERM,
		why:   "changes the filesystem view the sandbox was given",
	},
	{
		names: []string{"unshare", "setns"},
		errno: unix.EPERM,
		why:   "creates or enters namespaces (user namespaces unlock kernel attack surface)",
	},
	{
		names: []string{"clone3"},
		errno: unix.ENOSYS,
		why:   "its flags sit behind a pointer the filter cannot read; ENOSYS makes libc fall back to clone, whose flags are checked",
	},
	{
		names: []string{"io_uring_setup", "io_uring_enter", "io_uring_register"},
		errno: unix.ENOSYS,
		why:   "io_uring performs operations the filter never sees and is a frequent source of kernel exploits; ENOSYS makes its users fall back",
	},
	{
		names: []string{"swapon", "swapoff"},
		errno: unix.EPERM,
		why:   "changes the host's swap",
	},
	{
		names: []string{"settimeofday", "clock_settime", "clock_adjtime", "adjtimex"},
		errno: unix.EPERM,
		why:   "sets or steers the host's clock, which is not namespaced",
	},
	{
		names: []string{"acct", "quotactl", "quotactl_fd"},
		errno: unix.EPERM,
		why:   "host-wide process accounting or disk quotas",
	},
	{
		names: []string{"open_by_handle_at", "lookup_dcookie"},
		errno: unix.EPERM,
		why:   "reaches files by kernel handle, around the mount view (the \"shocker\" container escape)",
	},
	{
		names: []string{"syslog"},
		errno: unix.EPERM,
		why:   "reads or clears the kernel log, which leaks kernel addresses",
	},
	{
		names: []string{"uselib", "ustat", "sysfs", "_sysctl", "nfsservctl", "vhangup"},
		errno: unix.EPERM,
		why:   "obsolete or terminal-hangup interface with no use in a sandbox",
	},
	{
		names: []string{"iopl", "ioperm", "modify_ldt"},
		errno: unix.EPERM,
		why:   "x86 port I/O or descriptor-table changes",
	},
	{
		names: []string{"fanotify_init"},
		errno: unix.EPERM,
		why:   "watches filesystem events beyond the sandbox",
	},
}

// archOptional are names that some architectures' tables lack (x86-only
// calls, calls the generic table never had). A missing name outside this
// set is an error, so a typo cannot silently drop a rule.
var archOptional = map[string]bool{
	"create_module": true, "get_kernel_syms": true, "query_module": true,
	"uselib": true, "ustat": true, "sysfs": true, "_sysctl": true,
	"nfsservctl": true, "iopl": true, "ioperm": true, "modify_ldt": true,
}

// cloneNamespaceFlags are the CLONE_NEW* flags clone(2) can carry.
// CLONE_NEWTIME (0x80) is absent: it overlaps the exit-signal byte of
// clone(2), which the kernel masks off, and can only be asked for through
// clone3 and unshare, both refused.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// socketInetFamilies are the families socket(2) may create a socket of,
// with the (type, protocol) pairs of socketInetTypes only: TCP to reach
// the proxy (and loopback inside), UDP, which in the sandbox's empty
// network namespace reaches nothing but its own lo.
var socketInetFamilies = []uint32{unix.AF_INET, unix.AF_INET6}

// socketType is one allowed socket type and the protocols it may carry
// (0 asks the kernel for the type's default, TCP or UDP).
type socketType struct {
	typ       uint32
	protocols []uint32
}

// socketInetTypes are the allowed (type, protocol) pairs of the inet
// families. Everything else is refused: MPTCP (IPPROTO_MPTCP on a stream
// socket, which Landlock's TCP connect rule does not cover), SCTP,
// UDP-Lite, ICMP "ping" sockets, DCCP and any protocol a later kernel
// adds. The type argument carries SOCK_NONBLOCK and SOCK_CLOEXEC in its
// high bits; the kernel masks it with SOCK_TYPE_MASK, and so does the
// filter.
var socketInetTypes = []socketType{
	{typ: unix.SOCK_STREAM, protocols: []uint32{0, unix.IPPROTO_TCP}},
	{typ: unix.SOCK_DGRAM, protocols: []uint32{0, unix.IPPROTO_UDP}},
}

// refusedSocketTypes are refused with EPERM, as the kernel refuses them
// to a process without CAP_NET_RAW, rather than EPROTONOSUPPORT.
var refusedSocketTypes = []uint32{unix.SOCK_RAW, unix.SOCK_PACKET}

// socketpairFamilies are the families socketpair(2) may create: unix
// only (a connected pair reaches nothing but itself; the kernel supports
// no other family there).
var socketpairFamilies = []uint32{unix.AF_UNIX}

// sockTypeMask is the kernel's SOCK_TYPE_MASK.
const sockTypeMask = 0xf

// allowedPersonalities are the personality(2) values the sandbox may set:
// PER_LINUX, PER_LINUX32 (uname reports i686: 32-bit build chroots) and
// their UNAME26 variants, as Docker allows, and 0xffffffff, the query.
// Refused: ADDR_NO_RANDOMIZE (turns ASLR off), READ_IMPLIES_EXEC, and every
// other execution domain.
var allowedPersonalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// refusedIoctls are refused on every file descriptor: TIOCSTI types into a
// terminal's input queue (bubblewrap CVE-2017-5226), TIOCLINUX can do the
// same on a virtual console through its paste selection.
var refusedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

// fastOpenCalls are the calls that can open a TCP connection with
// MSG_FASTOPEN, and which argument holds their flags.
var fastOpenCalls = []struct {
	name     string
	flagsArg uint32
}{{"sendto", 3}, {"sendmsg", 2}, {"sendmmsg", 3}}

// argRules are the conditional refusals, in the receipt's words. The
// header (header_linux.go) and the clone group (build_linux.go) enforce
// them; the VM tests check that each says what the program does.
var argRules = []Rule{
	{Syscall: "clone", When: "flags include a CLONE_NEW* namespace flag", Errno: unix.EPERM,
		Why: "creates namespaces (user namespaces unlock kernel attack surface)"},
	{Syscall: "ioctl", When: "request is TIOCSTI or TIOCLINUX", Errno: unix.EPERM,
		Why: "injects input into a terminal (bubblewrap CVE-2017-5226)"},
	{Syscall: "socket", When: "family is AF_UNIX", Errno: unix.EACCES,
		Why: "a pathname or abstract unix socket can connect to a host service listening in a bound tree, which a read-only mount does not stop; socketpair stays allowed (docs/sandbox.md)"},
	{Syscall: "socket", When: "family is not AF_INET, AF_INET6 or AF_UNIX", Errno: unix.EAFNOSUPPORT,
		Why: "netlink, packet, key, vsock, bluetooth, alg and other families reach kernel or host interfaces the sandbox does not need"},
	{Syscall: "socket", When: "family is AF_INET or AF_INET6 and type is SOCK_RAW or SOCK_PACKET", Errno: unix.EPERM,
		Why: "raw sockets forge packets and reach protocol code the proxy does not mediate"},
	{Syscall: "socket", When: "family is AF_INET or AF_INET6 and (type, protocol) is not (SOCK_STREAM, 0 or IPPROTO_TCP) or (SOCK_DGRAM, 0 or IPPROTO_UDP)",
		Errno: unix.EPROTONOSUPPORT,
		Why:   "MPTCP, SCTP, UDP-Lite, ICMP and other protocols reach kernel code the sandbox has no use for, and Landlock's TCP rule does not cover MPTCP; EPROTONOSUPPORT makes Go and glibc fall back to TCP"},
	{Syscall: "socketpair", When: "family is not AF_UNIX", Errno: unix.EAFNOSUPPORT,
		Why: "creating the socket loads the family's kernel module"},
	{Syscall: "sendto", When: "flags include MSG_FASTOPEN", Errno: unix.EPERM,
		Why: "TCP Fast Open connects without connect(2), past Landlock's rule that allows TCP connect only to the proxy's port"},
	{Syscall: "sendmsg", When: "flags include MSG_FASTOPEN", Errno: unix.EPERM,
		Why: "TCP Fast Open connects without connect(2), past Landlock's rule that allows TCP connect only to the proxy's port"},
	{Syscall: "sendmmsg", When: "flags include MSG_FASTOPEN", Errno: unix.EPERM,
		Why: "TCP Fast Open connects without connect(2), past Landlock's rule that allows TCP connect only to the proxy's port"},
	{Syscall: "personality", When: "persona is not PER_LINUX, PER_LINUX32 (with or without UNAME26) or the 0xffffffff query",
		Errno: unix.EPERM, Why: "turns off address-space randomisation or changes the execution domain"},
}
