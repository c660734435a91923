package seccomp

import (
	"fmt"
	"slices"
	"syscall"
)

// Rule is one refusal of the filter, for the receipt and the documentation.
type Rule struct {
	// Syscall is the call's name in the kernel's syscall table.
	Syscall string
	// When is the argument condition under which the call is refused, or
	// "" when every call is refused.
	When string
	// Errno is the error the refused call returns.
	Errno syscall.Errno
	// Why is the fixed reason for the refusal.
	Why string
}

// Rules returns every refusal the filter makes on this architecture: the
// unconditional ones by syscall, then the ones that depend on an argument.
// Foreign-architecture and x32 calls (killed) and calls newer than the
// filter's table (ENOSYS) are described by Describe. The list is the one
// the filter was generated from (internal/assemble/rules_linux.go).
func Rules() []Rule {
	return slices.DeleteFunc(slices.Clone(allRules), func(r Rule) bool {
		return slices.Contains(native.absent, r.Syscall)
	})
}

// NoNetNSRules returns the refusals of the second filter
// (InstallNoNetNS).
func NoNetNSRules() []Rule {
	return slices.Clone(noNetNSRules)
}

// NoMemoryCgroupRules returns the refusals of the third filter
// (InstallNoMemoryCgroup).
func NoMemoryCgroupRules() []Rule {
	return slices.Clone(noMemcgRules)
}

// Describe returns one line for the run receipt, for example
// "seccomp filter: 83 rules, default allow, kill on foreign arch and x32,
// ENOSYS above syscall 467 (x86_64)".
func Describe() string {
	if native.filter == nil {
		return "seccomp filter: unavailable: " + errNoFilter().Error()
	}
	kill := "kill on foreign arch"
	if native.x32 {
		kill += " and x32"
	}
	return fmt.Sprintf("seccomp filter: %d rules, default allow, %s, ENOSYS above syscall %d (%s)",
		len(Rules()), kill, native.maxSyscall, native.arch)
}
