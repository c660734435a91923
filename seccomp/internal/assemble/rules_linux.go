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

// inetFamilies are AF_INET and AF_INET6.
var inetFamilies = []uint32{unix.AF_INET, unix.AF_INET6}

// argTest is how a condition tests the low 32 bits of an argument, the
// bits the kernel reads of an int argument.
type argTest int

const (
	// oneOf holds when the argument, ANDed with mask when mask is not 0,
	// equals one of vals.
	oneOf argTest = iota
	// noneOf holds when the argument, ANDed with mask when mask is not 0,
	// equals none of vals. The mask must be 0 or a run of low bits.
	noneOf
	// anyBit holds when the argument has any bit of vals[0] set.
	anyBit
)

// cond is one test of one argument (0-based).
type cond struct {
	arg  uint32
	test argTest
	mask uint32
	vals []uint32
}

// is, isNot and hasBit are the three tests; masked applies a mask.
func is(arg uint32, vals ...uint32) cond    { return cond{arg: arg, test: oneOf, vals: vals} }
func isNot(arg uint32, vals ...uint32) cond { return cond{arg: arg, test: noneOf, vals: vals} }
func hasBit(arg, bits uint32) cond          { return cond{arg: arg, test: anyBit, vals: []uint32{bits}} }
func masked(mask uint32, c cond) cond       { c.mask = mask; return c }

// argRule is one refusal that depends on arguments: the call is refused
// when every condition of any one of its clauses holds. Rule is the
// receipt's words for it.
//
// The rules of one call are disjoint (no call matches two of them), so
// the filter, which tests them in order, and a container profile, whose
// rules have no order, refuse a call with the same errno. A clause tests
// each argument at most once (the profile format's rule).
type argRule struct {
	Rule
	clauses [][]cond
	// byLibrary marks the clone rule, which go-seccomp-bpf assembles after
	// the name rules (build_linux.go); the header (header_linux.go)
	// assembles every other argument rule, in this order.
	byLibrary bool
}

// when returns a rule refused when all of conds hold.
func when(r Rule, conds ...cond) argRule { return argRule{Rule: r, clauses: [][]cond{conds}} }

// fastOpen is the refusal of MSG_FASTOPEN on call, whose flags are
// argument arg: TCP Fast Open connects from sendto, sendmsg and sendmmsg
// without connect(2), so Landlock's connect rule (only the proxy's port)
// never sees it.
func fastOpen(call string, arg uint32) argRule {
	return when(Rule{Syscall: call, When: "flags include MSG_FASTOPEN", Errno: unix.EPERM,
		Why: "TCP Fast Open connects without connect(2), past Landlock's rule that allows TCP connect only to the proxy's port"},
		hasBit(arg, unix.MSG_FASTOPEN))
}

// argRules are the conditional refusals, in the order of the filter and of
// the receipt. The VM tests check that each says what the program does.
//
// socket(2) is an allowlist: AF_INET and AF_INET6 with (SOCK_STREAM, 0 or
// IPPROTO_TCP) or (SOCK_DGRAM, 0 or IPPROTO_UDP) only. TCP reaches the
// proxy (and loopback inside), UDP nothing but the sandbox's own lo.
// Refused: MPTCP (IPPROTO_MPTCP on a stream socket, which Landlock's TCP
// connect rule does not cover), SCTP, UDP-Lite, ICMP "ping" sockets, DCCP
// and any protocol a later kernel adds; raw and packet types with EPERM,
// as the kernel refuses them to a process without CAP_NET_RAW; unix
// sockets with EACCES. socketpair(2) makes unix pairs only (a connected
// pair reaches nothing but itself).
//
// The personality rule allows PER_LINUX, PER_LINUX32 (uname reports i686:
// 32-bit build chroots) and their UNAME26 variants, as Docker allows, and
// 0xffffffff, the query; it refuses ADDR_NO_RANDOMIZE (turns ASLR off),
// READ_IMPLIES_EXEC and every other execution domain.
var argRules = []argRule{
	{
		Rule: Rule{Syscall: "clone", When: "flags include a CLONE_NEW* namespace flag", Errno: unix.EPERM,
			Why: "creates namespaces (user namespaces unlock kernel attack surface)"},
		clauses:   [][]cond{{hasBit(0, cloneNamespaceFlags)}},
		byLibrary: true,
	},
	// TIOCLINUX can inject input too, on a virtual console, through its
	// paste selection.
	when(Rule{Syscall: "ioctl", When: "request is TIOCSTI or TIOCLINUX", Errno: unix.EPERM,
		Why: "injects input into a terminal (bubblewrap CVE-2017-5226)"},
		is(1, unix.TIOCSTI, unix.TIOCLINUX)),
	when(Rule{Syscall: "socket", When: "family is AF_UNIX", Errno: unix.EACCES,
		Why: "a pathname or abstract unix socket can connect to a host service listening in a bound tree, which a read-only mount does not stop; socketpair stays allowed (docs/sandbox.md)"},
		is(0, unix.AF_UNIX)),
	when(Rule{Syscall: "socket", When: "family is not AF_INET, AF_INET6 or AF_UNIX", Errno: unix.EAFNOSUPPORT,
		Why: "netlink, packet, key, vsock, bluetooth, alg and other families reach kernel or host interfaces the sandbox does not need"},
		isNot(0, unix.AF_INET, unix.AF_INET6, unix.AF_UNIX)),
	when(Rule{Syscall: "socket", When: "family is AF_INET or AF_INET6 and type is SOCK_RAW or SOCK_PACKET", Errno: unix.EPERM,
		Why: "raw sockets forge packets and reach protocol code the proxy does not mediate"},
		is(0, inetFamilies...), masked(sockTypeMask, is(1, unix.SOCK_RAW, unix.SOCK_PACKET))),
	{
		Rule: Rule{Syscall: "socket", When: "family is AF_INET or AF_INET6 and (type, protocol) is not (SOCK_STREAM, 0 or IPPROTO_TCP) or (SOCK_DGRAM, 0 or IPPROTO_UDP)",
			Errno: unix.EPROTONOSUPPORT,
			Why:   "MPTCP, SCTP, UDP-Lite, ICMP and other protocols reach kernel code the sandbox has no use for, and Landlock's TCP rule does not cover MPTCP; EPROTONOSUPPORT makes Go and glibc fall back to TCP"},
		clauses: [][]cond{
			{is(0, inetFamilies...), masked(sockTypeMask, is(1, unix.SOCK_STREAM)), isNot(2, 0, unix.IPPROTO_TCP)},
			{is(0, inetFamilies...), masked(sockTypeMask, is(1, unix.SOCK_DGRAM)), isNot(2, 0, unix.IPPROTO_UDP)},
			{is(0, inetFamilies...), masked(sockTypeMask, isNot(1, unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_RAW, unix.SOCK_PACKET))},
		},
	},
	when(Rule{Syscall: "socketpair", When: "family is not AF_UNIX", Errno: unix.EAFNOSUPPORT,
		Why: "creating the socket loads the family's kernel module"},
		isNot(0, unix.AF_UNIX)),
	fastOpen("sendto", 3),
	fastOpen("sendmsg", 2),
	fastOpen("sendmmsg", 3),
	when(Rule{Syscall: "personality", When: "persona is not PER_LINUX, PER_LINUX32 (with or without UNAME26) or the 0xffffffff query",
		Errno: unix.EPERM, Why: "turns off address-space randomisation or changes the execution domain"},
		isNot(0, 0x0, 0x8, 0x20000, 0x20008, 0xffffffff)),
}

// noNetNSRules are the refusals of the second filter, stacked on the
// first in a sandbox that has no network namespace of its own (inside a
// container that refuses one: docs/sandbox.md, "Inside a container").
// There the sandbox shares the container's network, and the proxy stays
// its only way out only while Landlock allows TCP connect to the proxy's
// port alone and refuses bind(2), and this filter refuses the rest.
var noNetNSRules = []argRule{
	when(Rule{Syscall: "socket", When: "family is AF_INET or AF_INET6 and type is SOCK_DGRAM", Errno: unix.EACCES,
		Why: "without a network namespace of its own, a UDP socket reaches the container's network (its DNS resolver included) past the proxy, and Landlock's rules cover TCP only"},
		is(0, inetFamilies...), masked(sockTypeMask, is(1, unix.SOCK_DGRAM))),
	{
		Rule: Rule{Syscall: "listen", Errno: unix.EACCES,
			Why: "without a network namespace of its own, a listening socket takes connections from the container's network; Landlock refuses bind(2) to every port, but listen(2) binds an unbound socket itself"},
		clauses: [][]cond{{}},
	},
}

// noMemcgRules are the refusals of the third filter, stacked on the
// first in a sandbox without a memory cgroup (rootless without a delegated
// memory controller), where nothing counts the kernel memory these calls
// keep beyond any process's own (docs/sandbox.md, "Caps"):
//
//   - SysV IPC: shared memory segments outlive the processes that made
//     them and count to no process's RLIMIT_DATA; message queues and
//     semaphores are kernel memory; and rootless the parent cannot set the
//     IPC namespace's limits (uid 0 is not mapped inside, and only root
//     outside may write them). Refusing the three calls that create an
//     object leaves nothing for the others to act on (the namespace is the
//     sandbox's own and starts empty). ENOSYS, as on a kernel built
//     without SysV IPC, which its users (PostgreSQL among them) report
//     plainly. The generated architectures have no ipc(2) multiplexer
//     (arm's EABI and arm64 have the calls themselves; 386 is not
//     generated). POSIX shared memory lives on /dev/shm, within the
//     sandbox's capped tmpfs.
//   - UDP sockets: datagrams queued on the sandbox's own sockets and never
//     read are kernel memory, up to twice net.core.rmem_max a socket
//     (read-only in the sandbox's network namespace); one process held a
//     gigabyte. UDP reaches nothing but the sandbox's own lo.
var noMemcgRules = []argRule{
	sysvIPC("shmget", "a shared memory segment"),
	sysvIPC("msgget", "a message queue"),
	sysvIPC("semget", "a semaphore set"),
	when(Rule{Syscall: "socket", When: "family is AF_INET or AF_INET6 and type is SOCK_DGRAM", Errno: unix.EACCES,
		Why: "without a memory cgroup, nothing counts the datagrams queued and never read on the sandbox's own UDP sockets (kernel memory, up to twice net.core.rmem_max a socket); UDP reaches nothing but the sandbox's own lo"},
		is(0, inetFamilies...), masked(sockTypeMask, is(1, unix.SOCK_DGRAM))),
}

// sysvIPC is the unconditional refusal of call, which creates object.
func sysvIPC(call, object string) argRule {
	return argRule{
		Rule: Rule{Syscall: call, Errno: unix.ENOSYS,
			Why: "creates " + object + " of SysV IPC, which nothing bounds without a memory cgroup (kernel memory, or shared memory no process's limit counts)"},
		clauses: [][]cond{{}},
	}
}

// sandboxSetup are the refused calls that airlock itself makes: its
// sandbox init while it builds the sandbox, before it installs the filter,
// and its proxy (socket: the egress gate's rtnetlink watch of the host's
// addresses; a session holder's unix socket). A container whose entrypoint
// is airlock must let them through (the entrypoint profile, oci_linux.go),
// and the filter the init installs refuses them to everything it runs.
// The clone and socket rules are among them.
var sandboxSetup = map[string]bool{
	"clone": true, "clone3": true, "unshare": true, "socket": true,
	"mount": true, "umount2": true, "move_mount": true, "open_tree": true,
	"mount_setattr": true, "pivot_root": true, "chroot": true,
}
