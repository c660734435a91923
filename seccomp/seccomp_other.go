//go:build !linux

package seccomp

import (
	"errors"
	"runtime"
	"syscall"

	"golang.org/x/net/bpf"
)

// errUnsupported is returned on every system but Linux.
var errUnsupported = errors.New("seccomp: not available on " + runtime.GOOS)

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

// Program fails: seccomp is Linux-only.
func Program() ([]bpf.Instruction, error) { return nil, errUnsupported }

// Install fails: seccomp is Linux-only, and a sandbox must not run as if
// it had a filter.
func Install() error { return errUnsupported }

// InstallNoNetNS fails: seccomp is Linux-only.
func InstallNoNetNS() error { return errUnsupported }

// NoNetNSRules returns nil: there is no filter on this system.
func NoNetNSRules() []Rule { return nil }

// InstallNoMemoryCgroup fails: seccomp is Linux-only.
func InstallNoMemoryCgroup() error { return errUnsupported }

// NoMemoryCgroupRules returns nil: there is no filter on this system.
func NoMemoryCgroupRules() []Rule { return nil }

// Available reports false: seccomp is Linux-only.
func Available() bool { return false }

// Rules returns nil: there is no filter on this system.
func Rules() []Rule { return nil }

// Describe says that there is no filter on this system.
func Describe() string { return "seccomp filter: unavailable on " + runtime.GOOS }
