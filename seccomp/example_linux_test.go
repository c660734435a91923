package seccomp_test

import (
	"fmt"
	"syscall"

	"github.com/airlock-sandbox/airlock/seccomp"
)

// The refusals are listed for receipts and documentation; Install is
// what applies them (to the calling process, irreversibly).
func ExampleRules() {
	for _, r := range seccomp.Rules() {
		if r.Syscall == "ptrace" || r.Syscall == "clone3" || (r.Syscall == "socket" && r.Errno != syscall.EPERM) {
			fmt.Printf("%s %s: %v\n", r.Syscall, r.When, r.Errno)
		}
	}
	// Output:
	// ptrace : operation not permitted
	// clone3 : function not implemented
	// socket family is AF_UNIX: permission denied
	// socket family is not AF_INET, AF_INET6 or AF_UNIX: address family not supported by protocol
	// socket family is AF_INET or AF_INET6 and (type, protocol) is not (SOCK_STREAM, 0 or IPPROTO_TCP) or (SOCK_DGRAM, 0 or IPPROTO_UDP): protocol not supported
}
