package assemble

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// The container profiles: airlock's refusals, from the same tables as the
// filter (nameRules, argRules), in the JSON format that podman, Docker,
// containerd and CRI-O read from a seccomp profile file (the format of
// containers/common's and moby's seccomp.json). The types are written here
// because the libraries that define them need cgo and libseccomp.
//
// What the format cannot say, and so the profiles do not (docs/export.md):
//   - the action on a foreign architecture, x32 or (on arm64) arm32 call:
//     it is the runtime's libseccomp "bad architecture" action, which kills
//     the thread (airlock's filter kills the process). archMap lists each
//     architecture without its sub-architectures, so such calls get it.
//   - ENOSYS for syscall numbers above the filter's table: runc adds that
//     stub only to profiles whose default action is not allow, so a call
//     newer than the runtime's table is allowed.
//   - a syscall name the runtime's libseccomp does not know is skipped by
//     runc with a warning: the call is then allowed.
//
// The argument tests compare exactly what airlock's filter compares, the
// low 32 bits: every one is SCMP_CMP_MASKED_EQ with a mask whose high half
// is zero, which libseccomp compiles into a test of the low word only. A
// test of "none of these values" (noneOf) becomes the blocks of aligned
// values that cover the other values; a clause of several conditions
// becomes rules that test several arguments, which libseccomp ANDs. The
// rules of one call are disjoint (argRule), so the profile has no order to
// lose: a refused call matches one rule, with the filter's errno.

// ContainerProfileFile and EntrypointProfileFile are the profiles' file
// names in package seccomp.
const (
	ContainerProfileFile  = "profile.json"
	EntrypointProfileFile = "profile-entrypoint.json"
)

// Profile is a seccomp profile file.
type Profile struct {
	DefaultAction string    `json:"defaultAction"`
	ArchMap       []ArchMap `json:"archMap"`
	Syscalls      []Syscall `json:"syscalls"`
}

// ArchMap is an architecture a profile applies to and the
// sub-architectures whose calls it lets through.
type ArchMap struct {
	Architecture     string   `json:"architecture"`
	SubArchitectures []string `json:"subArchitectures"`
}

// Syscall is one rule of a profile: the action for calls to Names whose
// arguments pass every test in Args.
type Syscall struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet uint     `json:"errnoRet"`
	Args     []Arg    `json:"args,omitempty"`
	Comment  string   `json:"comment"`
}

// Arg is one argument test. For SCMP_CMP_MASKED_EQ, Value is the mask and
// ValueTwo the value the masked argument must equal.
type Arg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// scmpArch is libseccomp's name for each kernel architecture in GOARCHes.
var scmpArch = map[string]string{
	arch.X86_64.Name:  "SCMP_ARCH_X86_64",
	arch.ARM.Name:     "SCMP_ARCH_ARM",
	arch.AARCH64.Name: "SCMP_ARCH_AARCH64",
}

// BuildProfile returns the container profile: every refusal of the filter.
// With entrypoint, it leaves out the refusals of the calls that airlock's
// sandbox init makes while it builds the sandbox (sandboxSetup): the
// profile of a container whose entrypoint is airlock, where the filter the
// init installs refuses them to the commands it runs.
func BuildProfile(entrypoint bool) (*Profile, error) {
	p := &Profile{DefaultAction: "SCMP_ACT_ALLOW"}
	for _, goarch := range GOARCHes {
		info, err := arch.GetInfo(goarch)
		if err != nil {
			return nil, fmt.Errorf("assemble: no syscall table for %s: %w", goarch, err)
		}
		name, ok := scmpArch[info.Name]
		if !ok {
			return nil, fmt.Errorf("assemble: no libseccomp name for %s", info.Name)
		}
		p.ArchMap = append(p.ArchMap, ArchMap{Architecture: name, SubArchitectures: []string{}})
	}
	for _, r := range nameRules {
		var names []string
		for _, n := range r.names {
			if !entrypoint || !sandboxSetup[n] {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			p.Syscalls = append(p.Syscalls, Syscall{Names: names, Action: "SCMP_ACT_ERRNO",
				ErrnoRet: uint(r.errno), Comment: r.why})
		}
	}
	for _, r := range argRules {
		if entrypoint && sandboxSetup[r.Syscall] {
			continue
		}
		rules, err := profileRules(r)
		if err != nil {
			return nil, err
		}
		p.Syscalls = append(p.Syscalls, rules...)
	}
	return p, nil
}

// profileRules returns r as profile rules, any of which refuses the call:
// for each clause, one rule per combination of its conditions' masked
// tests, each rule testing every argument of the clause once.
func profileRules(r argRule) ([]Syscall, error) {
	var out []Syscall
	for _, conds := range r.clauses {
		combos := [][]Arg{nil}
		seen := map[uint32]bool{}
		for _, c := range conds {
			if seen[c.arg] {
				return nil, fmt.Errorf("assemble: %s: a clause tests argument %d twice", r.Syscall, c.arg)
			}
			seen[c.arg] = true
			tests, err := maskedTests(c)
			if err != nil {
				return nil, fmt.Errorf("assemble: %s: %w", r.Syscall, err)
			}
			var next [][]Arg
			for _, args := range combos {
				for _, t := range tests {
					next = append(next, append(slices.Clone(args),
						Arg{Index: uint(c.arg), Value: uint64(t[0]), ValueTwo: uint64(t[1]), Op: "SCMP_CMP_MASKED_EQ"}))
				}
			}
			combos = next
		}
		for _, args := range combos {
			// The reason once, on the refusal's first rule.
			comment := r.When
			if len(out) == 0 {
				comment += ": " + r.Why
			}
			out = append(out, Syscall{Names: []string{r.Syscall}, Action: "SCMP_ACT_ERRNO",
				ErrnoRet: uint(r.Errno), Comment: comment, Args: args})
		}
	}
	return out, nil
}

// maskedTests returns c as disjoint masked-equal tests, {mask, value}
// each: exactly one holds when c does, none when it does not.
func maskedTests(c cond) ([][2]uint32, error) {
	var out [][2]uint32
	mask := c.mask
	if mask == 0 {
		mask = 0xffffffff
	}
	switch c.test {
	case oneOf:
		for _, v := range c.vals {
			if v&mask != v {
				return nil, fmt.Errorf("value %#x has bits outside the mask %#x", v, mask)
			}
			out = append(out, [2]uint32{mask, v})
		}
	case anyBit:
		// One test per bit, that bit set and the lower ones of the set
		// clear: the tests are disjoint.
		var lower uint32
		for b := c.vals[0] & mask; b != 0; b &= b - 1 {
			bit := uint32(1) << bits.TrailingZeros32(b)
			out = append(out, [2]uint32{bit | lower, bit})
			lower |= bit
		}
	case noneOf:
		if mask&(mask+1) != 0 {
			return nil, fmt.Errorf("mask %#x is not a run of low bits", mask)
		}
		for _, v := range c.vals {
			if v&mask != v {
				return nil, fmt.Errorf("value %#x has bits outside the mask %#x", v, mask)
			}
		}
		out = complementBlocks(c.vals, mask)
	default:
		return nil, fmt.Errorf("unknown argument test %d", c.test)
	}
	return out, nil
}

// complementBlocks returns the fewest aligned blocks {mask, value} (the
// values v with v&mask == value) that cover every value of v&width not in
// vals, where width is a run of low bits: each gap between them is split
// into the largest aligned power-of-two blocks it holds.
func complementBlocks(vals []uint32, width uint32) [][2]uint32 {
	vs := slices.Clone(vals)
	slices.Sort(vs)
	vs = slices.Compact(vs)
	var out [][2]uint32
	lo := uint64(0)
	for _, v := range append(sliceU64(vs), uint64(width)+1) {
		for hi := v; lo < hi; { // cover [lo, hi)
			size := uint64(1) << bits.TrailingZeros64(lo|1<<32)
			for lo+size > hi {
				size >>= 1
			}
			out = append(out, [2]uint32{uint32(^(size - 1)) & width, uint32(lo)})
			lo += size
		}
		lo = v + 1
	}
	return out
}

func sliceU64(vs []uint32) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		out[i] = uint64(v)
	}
	return out
}

// profileJSON renders p as a JSON file with one rule a line: socket's
// allowlist alone is 185 rules, and an indented file would be four times
// the size.
func profileJSON(p *Profile) ([]byte, error) {
	var b bytes.Buffer
	line := func(prefix string, v any, suffix string) error {
		j, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("assemble: encode profile: %w", err)
		}
		b.WriteString(prefix)
		b.Write(j)
		b.WriteString(suffix)
		return nil
	}
	if err := line("{\n  \"defaultAction\": ", p.DefaultAction, ",\n"); err != nil {
		return nil, err
	}
	if err := line("  \"archMap\": ", p.ArchMap, ",\n  \"syscalls\": [\n"); err != nil {
		return nil, err
	}
	for i, s := range p.Syscalls {
		sep := ",\n"
		if i == len(p.Syscalls)-1 {
			sep = "\n"
		}
		if err := line("    ", s, sep); err != nil {
			return nil, err
		}
	}
	b.WriteString("  ]\n}\n")
	return b.Bytes(), nil
}

// profileFiles returns the two profile files by name.
func profileFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	for name, entrypoint := range map[string]bool{ContainerProfileFile: false, EntrypointProfileFile: true} {
		p, err := BuildProfile(entrypoint)
		if err != nil {
			return nil, err
		}
		b, err := profileJSON(p)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}
