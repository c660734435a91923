package assemble

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/seccomp/internal/bpfvm"
)

// profileVerdict evaluates p for one call as libseccomp does on a 64-bit
// architecture: the errnos of every rule whose names hold the call and
// whose every argument test passes; none means allowed.
func profileVerdict(p *Profile, name string, args [6]uint64) []uint {
	var errnos []uint
	for _, s := range p.Syscalls {
		if !slices.Contains(s.Names, name) {
			continue
		}
		match := true
		for _, a := range s.Args {
			if a.Op != "SCMP_CMP_MASKED_EQ" {
				panic("unexpected op " + a.Op)
			}
			match = match && args[a.Index]&a.Value == a.ValueTwo
		}
		if match {
			errnos = append(errnos, s.ErrnoRet)
		}
	}
	return errnos
}

// TestProfileMatchesFilter checks, on every architecture airlock builds a
// filter for, that the container profile refuses exactly the calls the
// filter refuses, each by one rule with the filter's errno, for every
// syscall in the table and a grid of argument values (high bits set
// included); and that the entrypoint profile differs only by letting the
// sandbox's setup calls through. Foreign architectures and numbers above
// the table are the runtime's (docs/export.md).
func TestProfileMatchesFilter(t *testing.T) {
	container, err := BuildProfile(false)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := BuildProfile(true)
	if err != nil {
		t.Fatal(err)
	}
	values := []uint64{0, 1, 2, 3, 8, 9, 10, 11, 16, 0x20000, 0x20008, 0x40000, 0x400000, 0xffffffff,
		unix.TIOCSTI, unix.TIOCLINUX, unix.TCGETS, unix.MSG_FASTOPEN, unix.MSG_NOSIGNAL | unix.MSG_FASTOPEN,
		unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.SOCK_PACKET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK,
		unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), unix.CLONE_NEWNET, unix.CLONE_VM | unix.CLONE_THREAD,
		1<<32 | unix.TIOCSTI, 1<<32 | 16, 1<<32 | unix.AF_INET, 0xffffffff_00000000, 0xffffffff_00000008}
	for _, goarch := range GOARCHes {
		t.Run(goarch, func(t *testing.T) {
			if goarch != runtime.GOARCH {
				testutil.SkipShort(t, "the grid on another architecture than this one")
			}
			tgt, err := Build(goarch)
			if err != nil {
				t.Fatal(err)
			}
			info, err := arch.GetInfo(goarch)
			if err != nil {
				t.Fatal(err)
			}
			vm := bpfvm.New(t, tgt.Program)
			bad := 0
			for nr := uint32(0); nr <= tgt.MaxSyscall; nr++ {
				name, ok := info.SyscallNumbers[int(nr)]
				if !ok {
					continue
				}
				inputs := []bpfvm.Data{{Nr: nr, Arch: tgt.AuditArch}}
				for arg := range 4 { // no rule reads arguments 4 and 5
					for _, v := range values {
						d := bpfvm.Data{Nr: nr, Arch: tgt.AuditArch}
						d.Args[arg] = v
						inputs = append(inputs, d)
					}
				}
				if multiArg[name] {
					inputs = append(inputs, socketGrid(nr, tgt.AuditArch)...)
				}
				for _, d := range inputs {
					got := bpfvm.Run(t, vm, d)
					for _, p := range []struct {
						name  string
						p     *Profile
						setup bool
					}{{"container", container, false}, {"entrypoint", entry, true}} {
						errnos := profileVerdict(p.p, name, d.Args)
						ok := len(errnos) == 0
						if got != retAllow && !(p.setup && sandboxSetup[name]) {
							ok = len(errnos) == 1 && errnos[0] == uint(got&uint32(unix.SECCOMP_RET_DATA))
						}
						if !ok && bad < 20 {
							bad++
							t.Errorf("%s profile: %s args %#x: errnos %v, filter returns %s",
								p.name, name, d.Args[:4], errnos, bpfvm.ActionName(got))
						}
					}
				}
			}
		})
	}
}

// multiArg are the calls whose rules test several arguments together:
// they are also tried on every combination of socketValues.
var multiArg = map[string]bool{"socket": true, "socketpair": true}

// socketValues are families, types (with SOCK_NONBLOCK, SOCK_CLOEXEC and
// high bits) and protocols, each tried in arguments 0, 1 and 2.
var socketValues = []uint64{0, unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK, unix.AF_PACKET, unix.AF_VSOCK,
	unix.SOCK_STREAM | unix.SOCK_NONBLOCK, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, unix.SOCK_RAW, unix.SOCK_SEQPACKET,
	unix.SOCK_DCCP, unix.SOCK_PACKET, 4, 11, 15, unix.IPPROTO_TCP, unix.IPPROTO_UDP, unix.IPPROTO_MPTCP,
	unix.IPPROTO_SCTP, unix.IPPROTO_UDPLITE, unix.IPPROTO_ICMP, 1<<32 | unix.AF_INET, 1<<32 | unix.IPPROTO_TCP}

// socketGrid is every combination of socketValues in arguments 0 to 2.
func socketGrid(nr, auditArch uint32) []bpfvm.Data {
	var out []bpfvm.Data
	for _, a := range socketValues {
		for _, b := range socketValues {
			for _, c := range socketValues {
				out = append(out, bpfvm.Data{Nr: nr, Arch: auditArch, Args: [6]uint64{a, b, c}})
			}
		}
	}
	return out
}

// TestComplementBlocks checks that the blocks cover every value of the
// width outside the set and none inside, exactly once, at the edges and
// at random.
func TestComplementBlocks(t *testing.T) {
	for _, tc := range []struct {
		vals  []uint32
		width uint32
	}{
		{[]uint32{1, 2, 10}, 0xffffffff}, {[]uint32{0, 8, 0x20000, 0x20008, 0xffffffff}, 0xffffffff},
		{[]uint32{0}, 0xffffffff}, {[]uint32{0xffffffff}, 0xffffffff}, {[]uint32{5, 5}, 0xffffffff},
		{[]uint32{1, 2, 3, 10}, 0xf}, {[]uint32{0, 15}, 0xf}, {[]uint32{0}, 1},
	} {
		blocks := complementBlocks(tc.vals, tc.width)
		probe := []uint32{0, 1, 0xfffffffe, 0xffffffff, 0x80000000, 0x7fffffff}
		for _, v := range tc.vals {
			probe = append(probe, v-1, v, v+1)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 10000 {
			probe = append(probe, r.Uint32())
		}
		for _, v := range probe {
			n := 0
			for _, b := range blocks {
				if v&b[0] == b[1] {
					n++
				}
			}
			if want := 1 - btoi(slices.Contains(tc.vals, v&tc.width)); n != want {
				t.Errorf("set %#x width %#x: %#x is in %d blocks, want %d", tc.vals, tc.width, v, n, want)
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestProfileDecodesStrictly decodes each generated profile into the
// profile types with unknown fields refused, and checks its shape.
func TestProfileDecodesStrictly(t *testing.T) {
	files, err := profileFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var p Profile
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.DefaultAction != "SCMP_ACT_ALLOW" || len(p.ArchMap) != len(GOARCHes) {
			t.Errorf("%s: default %s, %d architectures", name, p.DefaultAction, len(p.ArchMap))
		}
		for _, s := range p.Syscalls {
			if s.Action != "SCMP_ACT_ERRNO" || s.ErrnoRet == 0 || s.Comment == "" || len(s.Names) == 0 {
				t.Errorf("%s: rule %+v", name, s)
			}
		}
	}
}
