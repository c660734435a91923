package assemble

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/seccomp/internal/bpfvm"
	libseccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestEveryArchitecture runs the filter of every architecture in GOARCHes
// through the VM, with numbers from that architecture's table: so the
// programs for arm and arm64 are tested on an amd64 host too.
func TestEveryArchitecture(t *testing.T) {
	foreign := []uint32{0, unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, unix.AUDIT_ARCH_ARM}
	const hi = 1 << 32 // bits above the 32 an int argument has
	allow, eperm := retAllow, retErrno(unix.EPERM)
	for _, goarch := range GOARCHes {
		t.Run(goarch, func(t *testing.T) {
			tgt, err := Build(goarch)
			if err != nil {
				t.Fatal(err)
			}
			info, err := arch.GetInfo(goarch)
			if err != nil {
				t.Fatal(err)
			}
			vm := bpfvm.New(t, tgt.Program)
			check := func(what string, d bpfvm.Data, want uint32) {
				t.Helper()
				if got := bpfvm.Run(t, vm, d); got != want {
					t.Errorf("%s: nr %d arch %#x args %#x: filter returns %s, want %s",
						what, d.Nr, d.Arch, d.Args[:4], bpfvm.ActionName(got), bpfvm.ActionName(want))
				}
			}
			call := func(name string, args ...uint64) bpfvm.Data {
				t.Helper()
				nr, ok := info.SyscallNames[name]
				if !ok {
					t.Fatalf("%s: no %s in the table", goarch, name)
				}
				d := bpfvm.Data{Nr: uint32(nr), Arch: tgt.AuditArch}
				copy(d.Args[:], args)
				return d
			}

			listed := map[string]bool{}
			for _, r := range tgt.Rules {
				if r.When == "" {
					listed[r.Syscall] = true
					check(r.Syscall, call(r.Syscall), retErrno(r.Errno))
				}
			}
			for _, r := range nameRules {
				for _, n := range r.names {
					if _, inTable := info.SyscallNames[n]; !listed[n] && (inTable || !archOptional[n]) {
						t.Errorf("%s: the rule is missing from the %s filter", n, goarch)
					}
				}
			}
			for _, a := range foreign {
				if a != tgt.AuditArch {
					check("foreign arch", bpfvm.Data{Nr: 0, Arch: a}, retKill)
				}
			}
			check("first number after the table", bpfvm.Data{Nr: tgt.MaxSyscall + 1, Arch: tgt.AuditArch}, retErrno(unix.ENOSYS))
			if tgt.X32 {
				check("x32 read", bpfvm.Data{Nr: x32SyscallBit, Arch: tgt.AuditArch}, retKill)
			}
			for _, name := range []string{"read", "write", "openat", "execve", "exit_group", "getpid", "name_to_handle_at"} {
				check(name, call(name), allow)
			}
			check("clone fork", call("clone", uint64(unix.SIGCHLD)), allow)
			check("clone CLONE_NEWUSER", call("clone", unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), eperm)
			check("socket AF_INET stream", call("socket", unix.AF_INET, unix.SOCK_STREAM), allow)
			check("socket AF_NETLINK", call("socket", unix.AF_NETLINK, unix.SOCK_RAW), retErrno(unix.EAFNOSUPPORT))
			check("socket AF_INET raw", call("socket", unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC), eperm)
			check("socket AF_INET6 UDP", call("socket", unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK, unix.IPPROTO_UDP), allow)
			check("socket AF_INET MPTCP", call("socket", unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), retErrno(unix.EPROTONOSUPPORT))
			check("socket AF_INET SCTP", call("socket", unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP), retErrno(unix.EPROTONOSUPPORT))
			check("socket AF_UNIX", call("socket", unix.AF_UNIX, unix.SOCK_STREAM), retErrno(unix.EACCES))
			check("socketpair AF_UNIX", call("socketpair", unix.AF_UNIX, unix.SOCK_STREAM), allow)
			check("socketpair AF_INET", call("socketpair", unix.AF_INET, unix.SOCK_STREAM), retErrno(unix.EAFNOSUPPORT))
			check("ioctl TCGETS", call("ioctl", 0, unix.TCGETS), allow)
			check("ioctl TIOCSTI high bits", call("ioctl", 0, hi|unix.TIOCSTI), eperm)
			check("sendto MSG_FASTOPEN", call("sendto", 3, 0, 0, unix.MSG_FASTOPEN), eperm)
			check("sendmsg MSG_FASTOPEN", call("sendmsg", 3, 0, unix.MSG_FASTOPEN), eperm)
			check("personality query", call("personality", 0xffffffff), allow)
			check("personality PER_LINUX32", call("personality", 0x8), allow)
			check("personality ADDR_NO_RANDOMIZE", call("personality", 0x0040000), eperm)

			// The second filter, of a sandbox without a network namespace.
			vm = bpfvm.New(t, tgt.NoNetNSProgram)
			eacces := retErrno(unix.EACCES)
			check("no netns: socket AF_INET UDP", call("socket", unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), eacces)
			check("no netns: socket AF_INET6 UDP high bits", call("socket", hi|unix.AF_INET6, hi|unix.SOCK_DGRAM, unix.IPPROTO_UDP), eacces)
			check("no netns: socket AF_INET6 ping", call("socket", unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_ICMPV6), eacces)
			check("no netns: socket AF_INET TCP", call("socket", unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, unix.IPPROTO_TCP), allow)
			check("no netns: socket AF_UNIX dgram (the first filter's)", call("socket", unix.AF_UNIX, unix.SOCK_DGRAM), allow)
			check("no netns: socketpair dgram", call("socketpair", unix.AF_UNIX, unix.SOCK_DGRAM), allow)
			check("no netns: listen", call("listen", 3, 128), eacces)
			check("no netns: connect", call("connect", 3), allow)
			check("no netns: read", call("read"), allow)
			for _, a := range foreign {
				if a != tgt.AuditArch {
					check("no netns: foreign arch", bpfvm.Data{Nr: 0, Arch: a}, retKill)
				}
			}

			// The third filter, of a sandbox without a memory cgroup.
			vm = bpfvm.New(t, tgt.NoMemoryCgroupProgram)
			enosys := retErrno(unix.ENOSYS)
			check("no memcg: shmget", call("shmget", 0, 4096, 0o1600), enosys)
			check("no memcg: msgget", call("msgget", 0, 0o1600), enosys)
			check("no memcg: semget", call("semget", 0, 1, 0o1600), enosys)
			check("no memcg: shmat", call("shmat", 0), allow)
			check("no memcg: socket AF_INET UDP", call("socket", unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK), retErrno(unix.EACCES))
			check("no memcg: socket AF_INET6 TCP", call("socket", unix.AF_INET6, unix.SOCK_STREAM), allow)
			for _, a := range foreign {
				if a != tgt.AuditArch {
					check("no memcg: foreign arch", bpfvm.Data{Nr: 0, Arch: a}, retKill)
				}
			}
		})
	}
}

// TestMatchesLibraryPolicy compares, on this architecture, the program
// Build assembles group by group with the one the library's
// Policy.Assemble makes from the same rules (what airlock assembled at run
// time before it was generated): every verdict must be the same.
func TestMatchesLibraryPolicy(t *testing.T) {
	if !slices.Contains(GOARCHes, runtime.GOARCH) {
		t.Skipf("no filter is generated for %s", runtime.GOARCH)
	}
	tgt, err := Build(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	ref := libraryPolicyProgram(t)
	got, want := bpfvm.New(t, tgt.Program), bpfvm.New(t, ref)

	values := []uint64{1, 2, 3, 8, 10, 16, 0x20000, 0x20008, 0x40000, 0x400000, 0xffffffff,
		unix.TIOCSTI, unix.TIOCLINUX, unix.TCGETS, unix.MSG_FASTOPEN, unix.MSG_NOSIGNAL,
		unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.SOCK_PACKET, unix.IPPROTO_MPTCP, unix.IPPROTO_UDP, unix.SOCK_DCCP, unix.CLONE_NEWUSER | uint64(unix.SIGCHLD),
		unix.CLONE_NEWNS, unix.CLONE_VM | unix.CLONE_THREAD, 1<<32 | unix.TIOCSTI, 1<<32 | 16,
		0xffffffff_00000000}
	var inputs []bpfvm.Data
	for nr := uint32(0); nr <= tgt.MaxSyscall+2 && nr < 1000; nr++ {
		d := bpfvm.Data{Nr: nr, Arch: tgt.AuditArch}
		inputs = append(inputs, d)
		for arg := range 4 { // no rule reads arguments 4 and 5
			for _, v := range values {
				d := d
				d.Args[arg] = v
				inputs = append(inputs, d)
			}
		}
	}
	for _, nr := range []uint32{x32SyscallBit - 1, x32SyscallBit, x32SyscallBit | 1, 0x80000000, 0xfffffffe, 0xffffffff} {
		inputs = append(inputs, bpfvm.Data{Nr: nr, Arch: tgt.AuditArch})
	}
	for _, a := range []uint32{0, unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, unix.AUDIT_ARCH_ARM} {
		inputs = append(inputs, bpfvm.Data{Nr: 1, Arch: a}, bpfvm.Data{Nr: 101, Arch: a})
	}
	bad := 0
	for _, d := range inputs {
		if g, w := bpfvm.Run(t, got, d), bpfvm.Run(t, want, d); g != w && bad < 20 {
			bad++
			t.Errorf("nr %d arch %#x args %#x: Build's filter returns %s, the library's %s",
				d.Nr, d.Arch, d.Args, bpfvm.ActionName(g), bpfvm.ActionName(w))
		}
	}
}

// libraryPolicyProgram assembles this architecture's filter the way
// airlock did at run time: the header, then the library's Policy with
// the name rules and the clone rule as SyscallGroups.
func libraryPolicyProgram(t *testing.T) []bpf.Instruction {
	t.Helper()
	info, err := arch.GetInfo(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	head, err := header(info)
	if err != nil {
		t.Fatal(err)
	}
	var groups []libseccomp.SyscallGroup
	for _, r := range nameRules {
		var names []string
		for _, n := range r.names {
			if _, ok := info.SyscallNames[n]; ok {
				names = append(names, n)
			}
		}
		groups = append(groups, libseccomp.SyscallGroup{Names: names, Action: libseccomp.Action(retErrno(r.errno))})
	}
	groups = append(groups, libseccomp.SyscallGroup{
		NamesWithCondtions: []libseccomp.NameWithConditions{{
			Name: "clone",
			Conditions: libseccomp.ArgumentConditions{{
				Argument: 0, Operation: libseccomp.BitsSet, Value: cloneNamespaceFlags,
			}},
		}},
		Action: libseccomp.Action(retErrno(unix.EPERM)),
	})
	pol := libseccomp.Policy{DefaultAction: libseccomp.ActionAllow, Syscalls: groups}
	body, err := pol.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	return append(head, body...)
}

// TestNumberReloadedAfterHeader checks that the library's program sees
// the syscall number, not the argument the header's last block (the
// personality rule) leaves in A: with ptrace's number among the allowed
// personas, personality(that number) must still be allowed.
func TestNumberReloadedAfterHeader(t *testing.T) {
	info, err := arch.GetInfo("amd64")
	if err != nil {
		t.Fatal(err)
	}
	ptrace, pers := uint32(info.SyscallNames["ptrace"]), uint32(info.SyscallNames["personality"])
	saved := argRules
	t.Cleanup(func() { argRules = saved })
	argRules = slices.Clone(saved)
	last := &argRules[len(argRules)-1]
	if last.Syscall != "personality" {
		t.Fatalf("the last argument rule is %s, want personality", last.Syscall)
	}
	c := &last.clauses[0][0]
	last.clauses = [][]cond{{*c}}
	c = &last.clauses[0][0]
	c.vals = append(slices.Clone(c.vals), ptrace)
	tgt, err := Build("amd64")
	if err != nil {
		t.Fatal(err)
	}
	d := bpfvm.Data{Nr: pers, Arch: tgt.AuditArch, Args: [6]uint64{uint64(ptrace)}}
	if got := bpfvm.Run(t, bpfvm.New(t, tgt.Program), d); got != retAllow {
		t.Errorf("personality(%d): filter returns %s, want ALLOW", ptrace, bpfvm.ActionName(got))
	}
}

// TestUnknownNameFails checks that a misspelt rule fails assembly instead
// of silently dropping out of the filter, and that a call named twice
// does too.
func TestUnknownNameFails(t *testing.T) {
	saved := nameRules
	t.Cleanup(func() { nameRules = saved })
	for _, tc := range []struct {
		name, want string
	}{
		{"ptrcae", `assemble: syscall "ptrcae" is not in the x86_64 table`},
		{"ptrace", `assemble: syscall "ptrace" is named by two rules`},
	} {
		nameRules = append([]nameRule{{names: []string{tc.name}, errno: unix.EPERM, why: "typo"}}, saved...)
		if _, err := Build("amd64"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build with %q: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestUnsupportedArchitecture checks that an architecture without a
// syscall table, or whose table lacks a rule's call, fails.
func TestUnsupportedArchitecture(t *testing.T) {
	for goarch, want := range map[string]string{
		"riscv64": "assemble: no syscall table for riscv64",
		"386":     `assemble: syscall "kexec_file_load" is not in the i386 table`,
	} {
		if _, err := Build(goarch); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Build(%q): err = %v, want %q", goarch, err, want)
		}
	}
}

// BenchmarkBuild times assembling the filter for this architecture: what
// every airlock process paid at run time before the program was generated
// (go generate pays it now).
func BenchmarkBuild(b *testing.B) {
	for b.Loop() {
		if _, err := Build(runtime.GOARCH); err != nil {
			b.Fatal(err)
		}
	}
}
