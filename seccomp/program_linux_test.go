package seccomp

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/airlock-sandbox/airlock/seccomp/internal/bpfvm"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// x32SyscallBit is __X32_SYSCALL_BIT: on amd64, an x32 call carries the
// native audit arch and this bit in its number.
const x32SyscallBit = 0x40000000

// retErrno is the filter's return value that fails the call with errno.
func retErrno(errno unix.Errno) uint32 {
	return uint32(unix.SECCOMP_RET_ERRNO) | uint32(errno)&uint32(unix.SECCOMP_RET_DATA)
}

// table returns the library's syscall table for this architecture: the
// tests read numbers from it, the package itself never does.
func table(t testing.TB) *arch.Info {
	t.Helper()
	info, err := arch.GetInfo(runtime.GOARCH)
	if err != nil {
		t.Skipf("no syscall table for %s: %v", runtime.GOARCH, err)
	}
	return info
}

// newVM returns a VM running the filter, decoded by Program from the
// instructions Install hands to the kernel.
func newVM(t testing.TB) *bpf.VM {
	t.Helper()
	prog, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	return bpfvm.New(t, prog)
}

// TestEveryRuleRefuses runs every unconditional rule through the VM with
// the number from the library's table, and checks that argument rules
// leave the same call alone when the argument is harmless.
func TestEveryRuleRefuses(t *testing.T) {
	vm := newVM(t)
	info := table(t)
	n := 0
	for _, r := range Rules() {
		if r.When != "" {
			continue
		}
		n++
		nr, ok := info.SyscallNames[r.Syscall]
		if !ok {
			t.Errorf("rule %q: not in the %s table", r.Syscall, info.Name)
			continue
		}
		d := bpfvm.Data{Nr: uint32(nr), Arch: uint32(info.ID)}
		if got, want := bpfvm.Run(t, vm, d), retErrno(unix.Errno(r.Errno)); got != want {
			t.Errorf("%s: filter returns %s, want %s", r.Syscall, bpfvm.ActionName(got), bpfvm.ActionName(want))
		}
		if r.Why == "" {
			t.Errorf("%s: rule has no reason", r.Syscall)
		}
	}
	if n < 60 {
		t.Errorf("only %d unconditional rules; the table lost entries", n)
	}
}

// TestRulesAreDescribed checks the receipt's line and that every rule has
// a reason and an errno.
func TestRulesAreDescribed(t *testing.T) {
	requireAMD64(t)
	for _, r := range Rules() {
		if r.Why == "" || r.Errno == 0 || r.Syscall == "" {
			t.Errorf("incomplete rule %+v", r)
		}
	}
	want := fmt.Sprintf("seccomp filter: %d rules, default allow, kill on foreign arch and x32, ENOSYS above syscall 467 (x86_64)", len(Rules()))
	if got := Describe(); got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}

// TestFitsTheKernel checks the program encodes, stays far below the
// kernel's instruction limit, with room for the sandbox to stack more, and
// that Program decodes exactly the instructions Install installs.
func TestFitsTheKernel(t *testing.T) {
	prog, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) > 512 {
		t.Errorf("filter has %d instructions; every syscall runs through it", len(prog))
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		t.Fatal(err)
	}
	installed := make([]bpf.RawInstruction, len(native.filter))
	for i, f := range native.filter {
		installed[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}
	}
	if !slices.Equal(raw, installed) {
		t.Error("Program, encoded again, differs from the instructions Install installs")
	}
}

func requireAMD64(t testing.TB) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("the verdict table is written for x86_64 numbers")
	}
}
