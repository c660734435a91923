package seccomp

import (
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

//go:generate go run ./internal/gen

// target is the filter for the architecture this package is built for,
// assembled at build time by internal/assemble: native, in the generated
// program_linux_<goarch>.go (its rules in rules_generated_linux.go).
type target struct {
	// arch is the kernel's name for the architecture.
	arch string
	// auditArch is the AUDIT_ARCH_* value the filter requires.
	auditArch uint32
	// maxSyscall is the highest number in the filter's syscall table.
	maxSyscall uint32
	// x32 reports whether x32 calls are killed (amd64).
	x32 bool
	// absent are the calls of allRules that the architecture's table
	// lacks, which Rules leaves out.
	absent []string
	// filter is the program, nil where airlock has none.
	filter []unix.SockFilter
	// noNetNSFilter is the second filter (noNetNSRules), stacked on the
	// first in a sandbox without a network namespace of its own
	// (InstallNoNetNS).
	noNetNSFilter []unix.SockFilter
	// noMemcgFilter is the third filter (noMemcgRules), stacked on the
	// first in a sandbox without a memory cgroup (InstallNoMemoryCgroup).
	noMemcgFilter []unix.SockFilter
}

// errNoFilter is returned where the filter was not generated.
func errNoFilter() error {
	return fmt.Errorf("seccomp: no filter for %s: none is generated for this architecture", runtime.GOARCH)
}

// Program returns the filter as BPF instructions for this architecture.
func Program() ([]bpf.Instruction, error) {
	if native.filter == nil {
		return nil, errNoFilter()
	}
	prog := make([]bpf.Instruction, len(native.filter))
	for i, f := range native.filter {
		prog[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
	}
	return prog, nil
}
