package assemble

import (
	"encoding/binary"
	"errors"
	"fmt"

	libseccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// GOARCHes are the architectures the filter is generated for: those for
// which go-seccomp-bpf has a syscall table holding every rule's call. All
// are little-endian. 386 is not one: its table lacks kexec_file_load, and
// socketcall(2) would carry socket calls past the socket rules there.
var GOARCHes = []string{"amd64", "arm", "arm64"}

// maxInstructions is BPF_MAXINSNS, the kernel's limit for one filter.
const maxInstructions = 4096

// Target is the filter for one architecture and what package seccomp
// reports about it.
type Target struct {
	// GOARCH is Go's name for the architecture.
	GOARCH string
	// Arch is the kernel's name for it (x86_64, aarch64, arm).
	Arch string
	// AuditArch is the AUDIT_ARCH_* value the filter requires.
	AuditArch uint32
	// MaxSyscall is the highest number in the syscall table; the filter
	// answers higher numbers with ENOSYS.
	MaxSyscall uint32
	// X32 reports whether the filter kills x32 calls (amd64).
	X32 bool
	// Rules are the refusals on this architecture, in receipt order.
	Rules []Rule
	// Program is the filter.
	Program []bpf.Instruction
	// NoNetNSRules and NoNetNSProgram are the second filter, stacked on
	// the first in a sandbox without a network namespace of its own
	// (noNetNSRules).
	NoNetNSRules   []Rule
	NoNetNSProgram []bpf.Instruction
	// NoMemoryCgroupRules and NoMemoryCgroupProgram are the third
	// filter, stacked on the first in a sandbox without a memory cgroup
	// (noMemcgRules).
	NoMemoryCgroupRules   []Rule
	NoMemoryCgroupProgram []bpf.Instruction
}

// Rule is one refusal, as package seccomp reports it.
type Rule struct {
	// Syscall is the call's name in the kernel's syscall table.
	Syscall string
	// When is the argument condition of the refusal, or "" for every call.
	When string
	// Errno is the error the refused call returns.
	Errno unix.Errno
	// Why is the fixed reason for the refusal.
	Why string
}

// Build assembles the filter for goarch: the header, a reload of the
// syscall number, then the library's program for the name rules and the
// clone flag rule, ending in the default action, allow.
func Build(goarch string) (*Target, error) {
	// The library lays out the clone rule's argument words in the host's
	// byte order, whatever the target.
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, errors.New("assemble: run on a little-endian host: go-seccomp-bpf loads arguments in the host's byte order")
	}
	info, err := arch.GetInfo(goarch)
	if err != nil {
		return nil, fmt.Errorf("assemble: no syscall table for %s: %w", goarch, err)
	}
	head, err := header(info)
	if err != nil {
		return nil, err
	}
	groups, err := libraryGroups(info)
	if err != nil {
		return nil, err
	}
	body, err := assembleGroups(groups)
	if err != nil {
		return nil, err
	}
	prog := append(head, bpf.LoadAbsolute{Off: offNr, Size: 4})
	prog = append(prog, body...)
	if len(prog) > maxInstructions {
		return nil, fmt.Errorf("assemble: filter has %d instructions, the kernel takes at most %d", len(prog), maxInstructions)
	}
	if _, err := bpf.Assemble(prog); err != nil {
		return nil, fmt.Errorf("assemble: encode filter: %w", err)
	}
	noNet, err := stackedProgram(info, noNetNSRules)
	if err != nil {
		return nil, fmt.Errorf("%w (the no-network-namespace filter)", err)
	}
	noMemcg, err := stackedProgram(info, noMemcgRules)
	if err != nil {
		return nil, fmt.Errorf("%w (the no-memory-cgroup filter)", err)
	}
	return &Target{
		GOARCH:     goarch,
		Arch:       info.Name,
		AuditArch:  uint32(info.ID),
		MaxSyscall: maxSyscall(info),
		X32:        info.ID == arch.X86_64.ID,
		Rules:      rules(info),
		Program:    prog,

		NoNetNSRules:          ruleList(noNetNSRules),
		NoNetNSProgram:        noNet,
		NoMemoryCgroupRules:   ruleList(noMemcgRules),
		NoMemoryCgroupProgram: noMemcg,
	}, nil
}

// ruleList returns the receipt's rules of a stacked filter's rules.
func ruleList(rules []argRule) []Rule {
	var out []Rule
	for _, r := range rules {
		out = append(out, r.Rule)
	}
	return out
}

// stackedProgram assembles a filter stacked on the first (the second,
// noNetNSRules, or the third, noMemcgRules): the architecture check
// (foreign calls are killed, as by the first filter, under which this one
// always runs), one block per rule, then allow.
func stackedProgram(info *arch.Info, rules []argRule) ([]bpf.Instruction, error) {
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
	}
	for _, r := range rules {
		n, ok := info.SyscallNames[r.Syscall]
		if !ok {
			return nil, fmt.Errorf("assemble: syscall %q is not in the %s table", r.Syscall, info.Name)
		}
		block, err := ruleBlock(uint32(n), r)
		if err != nil {
			return nil, err
		}
		prog = append(prog, block...)
	}
	prog = append(prog, bpf.RetConstant{Val: retAllow})
	if _, err := bpf.Assemble(prog); err != nil {
		return nil, fmt.Errorf("assemble: encode a stacked filter: %w", err)
	}
	return prog, nil
}

// group is one block of the library's program: the calls it matches and
// the action it returns for them.
type group struct {
	calls  []libseccomp.SyscallWithConditions
	action libseccomp.Action
}

// libraryGroups resolves the name rules and the clone rule to the numbers
// of info's table. A name the table lacks is an error unless archOptional
// lists it, so a typo cannot drop a rule. The library fails a group's
// action of ActionErrno with EPERM; any other errno is passed as the
// action's data bits, which the library emits unchanged (checked by the
// VM tests).
func libraryGroups(info *arch.Info) ([]group, error) {
	seen := map[string]bool{}
	var groups []group
	for _, r := range nameRules {
		g := group{action: libseccomp.Action(retErrno(r.errno))}
		for _, n := range r.names {
			if seen[n] {
				return nil, fmt.Errorf("assemble: syscall %q is named by two rules", n)
			}
			seen[n] = true
			nr, ok := info.SyscallNames[n]
			if !ok {
				if archOptional[n] {
					continue // this architecture never had the call
				}
				return nil, fmt.Errorf("assemble: syscall %q is not in the %s table", n, info.Name)
			}
			g.calls = append(g.calls, libseccomp.SyscallWithConditions{Num: uint32(nr)})
		}
		groups = append(groups, g)
	}
	for _, r := range argRules {
		if !r.byLibrary {
			continue
		}
		nr, ok := info.SyscallNames[r.Syscall]
		if !ok {
			return nil, fmt.Errorf("assemble: syscall %q is not in the %s table", r.Syscall, info.Name)
		}
		// The library's rule is one BitsSet test of one argument.
		if len(r.clauses) != 1 || len(r.clauses[0]) != 1 || r.clauses[0][0].test != anyBit || r.clauses[0][0].mask != 0 {
			return nil, fmt.Errorf("assemble: %s: the library assembles only a test of one argument's bits", r.Syscall)
		}
		c := r.clauses[0][0]
		// clone's flags are an unsigned long of which the kernel reads the
		// low 32 bits; the mask's high half is zero, so the library's
		// 64-bit BitsSet test is exactly the kernel's view.
		groups = append(groups, group{
			calls: []libseccomp.SyscallWithConditions{{
				Num: uint32(nr),
				Conditions: []libseccomp.ArgumentConditions{{{
					Argument: c.arg, Operation: libseccomp.BitsSet, Value: uint64(c.vals[0]),
				}}},
			}},
			action: libseccomp.Action(retErrno(r.Errno)),
		})
	}
	return groups, nil
}

// assembleGroups assembles the groups with the library's assembler, which
// resolves the jumps (long ones included), as its SyscallGroup.Assemble
// does for the running architecture only. Each group expects the syscall
// number in A, and a group with argument conditions leaves an argument
// there, so such groups come last (only the clone group has any).
func assembleGroups(groups []group) ([]bpf.Instruction, error) {
	p := libseccomp.NewProgram()
	for _, g := range groups {
		if len(g.calls) == 0 {
			continue // no call of the group exists on this architecture
		}
		match, next := p.NewLabel(), p.NewLabel()
		for i, c := range g.calls {
			c.Assemble(&p, i < len(g.calls)-1, match, next)
		}
		p.SetLabel(match)
		p.Ret(g.action)
		p.SetLabel(next)
	}
	p.Ret(libseccomp.ActionAllow)
	prog, err := p.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assemble: rules: %w", err)
	}
	return prog, nil
}

// rules lists the refusals on the architecture of info, or every refusal
// when info is nil.
func rules(info *arch.Info) []Rule {
	var out []Rule
	for _, r := range nameRules {
		for _, n := range r.names {
			if info != nil {
				if _, ok := info.SyscallNames[n]; !ok {
					continue
				}
			}
			out = append(out, Rule{Syscall: n, Errno: r.errno, Why: r.why})
		}
	}
	for _, r := range argRules {
		out = append(out, r.Rule)
	}
	return out
}
