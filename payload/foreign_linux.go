package payload

import (
	"fmt"
	"os"
	"strings"
)

// The foreign-architecture payloads make a system call through an ABI
// other than the native one (i386's int 0x80, or x32's numbers, from an
// amd64 process). A seccomp filter that checks the numbers of one ABI
// only would let them through; airlock's kills the process (SIGSYS). Each
// runs in a child, which the payload waits for and reports on.
func init() {
	Register("foreign-abi", foreignABI)
	Register("foreign-abi-child", foreignABIChild)
}

// foreign-abi int80|x32: run the call in a child and report how the
// child ended.
func foreignABI(args []string) int {
	if len(args) != 1 || foreignCalls[args[0]] == nil {
		return usage("foreign-abi", strings.Join(foreignNames(), "|"))
	}
	cmd := self("foreign-abi-child", args[0])
	out, err := cmd.CombinedOutput()
	sig := signalName(cmd.ProcessState)
	r := Report{Attempt: "foreign-abi", Detail: map[string]string{"signal": sig, "abi": args[0],
		"output": strings.TrimSpace(string(out[:min(len(out), 256)]))}}
	switch {
	case sig != "":
		r.Evidence = fmt.Sprintf("the %s call killed the process with %s", args[0], sig)
	case err == nil:
		r.Succeeded = true
		r.Evidence = fmt.Sprintf("the %s call returned: %s", args[0], r.Detail["output"])
	default:
		r.Errno = errnoName(err)
		r.Evidence = fmt.Sprintf("the child failed without a signal: %v: %s", err, r.Detail["output"])
	}
	return report(r)
}

// foreign-abi-child NAME: make the call; exit 0 if it returned a pid,
// 1 with the errno otherwise.
func foreignABIChild(args []string) int {
	if len(args) != 1 || foreignCalls[args[0]] == nil {
		return ExitUsage
	}
	ret := foreignCalls[args[0]]()
	if ret < 0 && ret > -4096 {
		fmt.Printf("returned errno %d\n", -ret)
		return 1
	}
	fmt.Printf("getpid returned %d (pid %d)\n", ret, os.Getpid())
	return 0
}

func foreignNames() []string {
	var n []string
	for k := range foreignCalls {
		n = append(n, k)
	}
	return n
}
