// Package seccomp builds and installs the seccomp filter of airlock's
// sandbox.
//
// # Policy: a strong deny-list on a default-allow filter
//
// The filter allows every system call it does not name. A default-deny
// allowlist would have to list every call that any toolchain an agent may
// run (compilers, interpreters, language runtimes, package managers) makes
// on any kernel, and breaks them the day a libc starts using a new call.
// Docker's and Podman's default profiles are such allowlists, several
// hundred names long and maintained release by release by a team; Codex's
// Linux sandbox allows by default and denies the calls it must stop.
// airlock's sandbox adds namespaces, Landlock, a non-root uid with no
// capabilities and no_new_privs under the filter, so the filter's job is to
// close the kernel interfaces those leave open. What makes the deny-list
// strong:
//
//   - A foreign architecture kills the process (SECCOMP_RET_KILL_PROCESS):
//     an i386 call through int 0x80 on amd64, an x32 call (syscall number
//     with __X32_SYSCALL_BIT set), an arm32 call on arm64. Their syscall
//     numbers mean different calls, so no rule written for the native table
//     could hold for them.
//   - A syscall number above the highest one in the filter's table (a call
//     added by a kernel newer than the table) returns ENOSYS, as runc does:
//     a new interface is new attack surface (io_uring was), and ENOSYS is
//     what libc already handles as "old kernel" and falls back from.
//   - The named calls are the ones that reach kernel attack surface or host
//     state that namespaces do not isolate (see Rules): ptrace and its
//     relatives, kexec, modules, bpf, perf, userfaultfd, keyrings, every
//     mount call, namespace creation and entry, io_uring, personality
//     changes, reboot, swap, the clock, accounting, quotas, file handles,
//     the kernel log, obsolete interfaces, x86 port I/O, terminal injection
//     (TIOCSTI, TIOCLINUX), and TCP Fast Open (MSG_FASTOPEN on sendto,
//     sendmsg and sendmmsg), which opens a connection without connect(2)
//     and so past Landlock's rule that TCP may connect only to the proxy.
//   - socket(2) is an allowlist: inet and inet6 sockets of type
//     SOCK_STREAM with protocol 0 or TCP and SOCK_DGRAM with 0 or UDP,
//     nothing else (no MPTCP, which Landlock's TCP rule does not cover, no
//     SCTP, ICMP, raw or packet sockets, no other family). Unix sockets
//     are refused too: a read-only bind does not stop connect(2) to a host
//     service listening in a bound tree; socketpair(2) of AF_UNIX stays
//     allowed (docs/sandbox.md).
//   - A sandbox without a network namespace of its own (inside a container
//     that refuses one) gets a second filter stacked on the first
//     (InstallNoNetNS): UDP sockets and listen(2) are refused with EACCES
//     too, so that TCP connect to the proxy's port, which Landlock allows
//     alone, is its only way out (docs/sandbox.md, "Inside a container").
//   - A sandbox without a memory cgroup (rootless, without a delegated
//     memory controller) gets a third (InstallNoMemoryCgroup): shmget,
//     msgget and semget fail with ENOSYS and UDP sockets with EACCES, the
//     kernel memory nothing else would count (docs/sandbox.md, "Caps").
//
// # Errors the refused calls return
//
// Almost every refusal is EPERM: it is what the kernel itself answers an
// unprivileged process for these operations, so software already has the
// error path. The exceptions are chosen so that the caller falls back
// instead of failing: clone3 and io_uring return ENOSYS ("this kernel lacks
// it": glibc retries clone3 as clone, whose flags the filter can read;
// libuv, liburing users and Tokio fall back to threads), a refused
// socket family returns EAFNOSUPPORT ("family not supported", which glibc's
// getaddrinfo and interface enumeration tolerate), and a refused inet
// protocol EPROTONOSUPPORT (Go's net package then uses plain TCP instead
// of MPTCP). A unix socket gets EACCES, as an LSM's refusal would: glibc's
// nscd and syslog clients give up quietly on it.
//
// # How the program is built
//
// The filter is assembled when airlock is built, not when it runs.
// internal/assemble holds the refusals (rules_linux.go) and builds the
// program for each architecture airlock supports (amd64, arm, arm64):
// github.com/elastic/go-seccomp-bpf resolves syscall names to numbers in
// that architecture's table and assembles the name rules and the clone
// flag rule (with long jumps handled). Airlock puts a short hand-written
// header (golang.org/x/net/bpf instructions) in front for what the library
// does not do: it takes the default action on an architecture mismatch
// (allow, in a default-allow filter), answers x32 with ENOSYS rather than a
// kill, and compares arguments as 64-bit values, so a deny-on-equal rule on
// an int argument could be bypassed by setting the high 32 bits the kernel
// ignores (the flatpak TIOCSTI bypass, CVE-2019-10063). The header compares
// only the low 32 bits for int arguments, exactly what the kernel reads.
//
// go generate ./seccomp (on Linux) runs internal/gen, which writes the
// program, the calls its table lacks and the table's facts that Describe
// reports into program_linux_<goarch>.go, one committed file per
// architecture, and the rules into rules_generated_linux.go;
// program_linux_others.go gives every other architecture no filter, so
// Install and Program fail there. This package compiles those files in and
// never imports the library: an airlock process (the command, then the
// sandbox's init) pays neither the library's syscall tables for every
// architecture in package initialisation nor the assembly before Install.
// A test assembles everything again and fails when a committed file
// differs from it: after changing a rule, run go generate ./seccomp.
//
// # For the sandbox's init
//
// Install is irreversible and applies to every thread and every later
// child. Call it last, just before executing the target: after it, mount,
// pivot_root, unshare and setns fail, and clone3 returns ENOSYS (a Go
// program that sets SysProcAttr.UseCgroupFD cannot start children). A
// foreign-ABI call kills with SIGSYS, which dumps core unless RLIMIT_CORE
// is 0.
//
// Install is Linux-only; on other systems it returns an error.
package seccomp
