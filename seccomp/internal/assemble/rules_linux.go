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

// sockTypeMask is the kernel's SOCK_TYPE_MASK: the type argument of
// socket(2) carries SOCK_NONBLOCK and SOCK_CLOEXEC in its higher bits.
const sockTypeMask = 0xf

// argTest is how an argument rule tests the low 32 bits of its argument,
// the bits the kernel reads of an int argument.
type argTest int

const (
	// refuseIn refuses the call when the argument, ANDed with mask when
	// mask is not 0, equals one of vals.
	refuseIn argTest = iota
	// refuseUnlessIn refuses the call unless the argument equals one of
	// vals.
	refuseUnlessIn
	// refuseBits refuses the call when the argument has any bit of vals[0]
	// set.
	refuseBits
)

// argRule is one refusal that depends on an argument: the test the filter
// makes, and the receipt's words for it (Rule).
type argRule struct {
	Rule
	// arg is the argument tested (0-based).
	arg uint32
	// test, mask and vals are the test.
	test argTest
	mask uint32
	vals []uint32
	// byLibrary marks the clone rule, which go-seccomp-bpf assembles after
	// the name rules (build_linux.go); the header (header_linux.go)
	// assembles every other argument rule, in this order.
	byLibrary bool
}

// fastOpen is the refusal of MSG_FASTOPEN on call, whose flags are
// argument arg: TCP Fast Open connects from sendto, sendmsg and sendmmsg
// without connect(2), so Landlock's connect rule (only the proxy's port)
// never sees it.
func fastOpen(call string, arg uint32) argRule {
	return argRule{
		Rule: Rule{Syscall: call, When: "flags include MSG_FASTOPEN", Errno: unix.EPERM,
			Why: "TCP Fast Open connects without connect(2), past Landlock's rule that allows TCP connect only to the proxy's port"},
		arg: arg, test: refuseBits, vals: []uint32{unix.MSG_FASTOPEN},
	}
}

// argRules are the conditional refusals, in the order of the filter and of
// the receipt. The VM tests check that each says what the program does.
//
// The socket rules allow only AF_UNIX, AF_INET and AF_INET6 and refuse
// SOCK_RAW and SOCK_PACKET for them. The personality rule allows
// PER_LINUX, PER_LINUX32 (uname reports i686: 32-bit build chroots) and
// their UNAME26 variants, as Docker allows, and 0xffffffff, the query; it
// refuses ADDR_NO_RANDOMIZE (turns ASLR off), READ_IMPLIES_EXEC and every
// other execution domain.
var argRules = []argRule{
	{
		Rule: Rule{Syscall: "clone", When: "flags include a CLONE_NEW* namespace flag", Errno: unix.EPERM,
			Why: "creates namespaces (user namespaces unlock kernel attack surface)"},
		arg: 0, test: refuseBits, vals: []uint32{cloneNamespaceFlags}, byLibrary: true,
	},
	{
		// TIOCLINUX can inject input too, on a virtual console, through its
		// paste selection.
		Rule: Rule{Syscall: "ioctl", When: "request is TIOCSTI or TIOCLINUX", Errno: unix.EPERM,
			Why: "injects input into a terminal (bubblewrap CVE-2017-5226)"},
		arg: 1, test: refuseIn, vals: []uint32{unix.TIOCSTI, unix.TIOCLINUX},
	},
	{
		Rule: Rule{Syscall: "socket", When: "family is not AF_UNIX, AF_INET or AF_INET6", Errno: unix.EAFNOSUPPORT,
			Why: "netlink, packet, key, vsock, alg and other families reach kernel or host interfaces the sandbox does not need"},
		arg: 0, test: refuseUnlessIn, vals: []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6},
	},
	{
		Rule: Rule{Syscall: "socket", When: "type is SOCK_RAW or SOCK_PACKET", Errno: unix.EPERM,
			Why: "raw sockets forge packets and reach protocol code the proxy does not mediate"},
		arg: 1, test: refuseIn, mask: sockTypeMask, vals: []uint32{unix.SOCK_RAW, unix.SOCK_PACKET},
	},
	{
		Rule: Rule{Syscall: "socketpair", When: "family is not AF_UNIX, AF_INET or AF_INET6", Errno: unix.EAFNOSUPPORT,
			Why: "creating the socket loads the family's kernel module"},
		arg: 0, test: refuseUnlessIn, vals: []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6},
	},
	{
		Rule: Rule{Syscall: "socketpair", When: "type is SOCK_RAW or SOCK_PACKET", Errno: unix.EPERM,
			Why: "raw sockets forge packets and reach protocol code the proxy does not mediate"},
		arg: 1, test: refuseIn, mask: sockTypeMask, vals: []uint32{unix.SOCK_RAW, unix.SOCK_PACKET},
	},
	fastOpen("sendto", 3),
	fastOpen("sendmsg", 2),
	fastOpen("sendmmsg", 3),
	{
		Rule: Rule{Syscall: "personality", When: "persona is not PER_LINUX, PER_LINUX32 (with or without UNAME26) or the 0xffffffff query",
			Errno: unix.EPERM, Why: "turns off address-space randomisation or changes the execution domain"},
		arg: 0, test: refuseUnlessIn, vals: []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff},
	},
}

// sandboxSetup are the refused calls that airlock's sandbox init itself
// makes while it builds the sandbox, before it installs the filter: a
// container whose entrypoint is airlock must let them through (the
// entrypoint profile, oci_linux.go), and the filter the init installs
// refuses them to everything it runs. The clone rule is one of them.
var sandboxSetup = map[string]bool{
	"clone": true, "clone3": true, "unshare": true,
	"mount": true, "umount2": true, "move_mount": true, "open_tree": true,
	"mount_setattr": true, "pivot_root": true, "chroot": true,
}
