package seccomp

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/airlock-sandbox/airlock/seccomp/internal/assemble"
)

// TestGeneratedFilesAreCurrent assembles the filter for every architecture
// with go-seccomp-bpf, as go generate does, and fails when a committed
// file differs: a change to the rules, the header or the library's tables
// must be regenerated, with go generate ./seccomp.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := assemble.Files()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%v: run go generate ./seccomp", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale at line %d: run go generate ./seccomp", name, firstDiffLine(got, want))
		}
	}
	old, err := filepath.Glob("program_linux_*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range old {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := files[name]; !ok && bytes.HasPrefix(src, []byte(assemble.Header+"\n")) {
			t.Errorf("%s is no longer generated: run go generate ./seccomp", name)
		}
	}
}

// firstDiffLine returns the 1-based number of the first line where a and
// b differ.
func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// TestCompiledInIsAssembled checks the target compiled into this test
// binary against what the assembler builds for this architecture now.
func TestCompiledInIsAssembled(t *testing.T) {
	if !slices.Contains(assemble.GOARCHes, runtime.GOARCH) {
		if native.filter != nil {
			t.Fatalf("%s has a compiled-in filter but is not generated", runtime.GOARCH)
		}
		t.Skipf("no filter is generated for %s", runtime.GOARCH)
	}
	want, err := assemble.Build(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bpf.Assemble(want.Program)
	if err != nil {
		t.Fatal(err)
	}
	filter := make([]bpf.RawInstruction, len(native.filter))
	for i, f := range native.filter {
		filter[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}
	}
	if !slices.Equal(filter, raw) {
		t.Error("the compiled-in filter differs from the assembled one")
	}
	raw, err = bpf.Assemble(want.NoNetNSProgram)
	if err != nil {
		t.Fatal(err)
	}
	filter = filter[:0]
	for _, f := range native.noNetNSFilter {
		filter = append(filter, bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K})
	}
	if !slices.Equal(filter, raw) {
		t.Error("the compiled-in second filter differs from the assembled one")
	}
	var noNet []Rule
	for _, r := range want.NoNetNSRules {
		noNet = append(noNet, Rule{Syscall: r.Syscall, When: r.When, Errno: syscall.Errno(r.Errno), Why: r.Why})
	}
	if !reflect.DeepEqual(NoNetNSRules(), noNet) {
		t.Error("NoNetNSRules differs from the assembled rules")
	}
	raw, err = bpf.Assemble(want.NoMemoryCgroupProgram)
	if err != nil {
		t.Fatal(err)
	}
	filter = filter[:0]
	for _, f := range native.noMemcgFilter {
		filter = append(filter, bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K})
	}
	if !slices.Equal(filter, raw) {
		t.Error("the compiled-in third filter differs from the assembled one")
	}
	var noIPC []Rule
	for _, r := range want.NoMemoryCgroupRules {
		noIPC = append(noIPC, Rule{Syscall: r.Syscall, When: r.When, Errno: syscall.Errno(r.Errno), Why: r.Why})
	}
	if !reflect.DeepEqual(NoMemoryCgroupRules(), noIPC) {
		t.Error("NoMemoryCgroupRules differs from the assembled rules")
	}
	var rules []Rule
	for _, r := range want.Rules {
		rules = append(rules, Rule{Syscall: r.Syscall, When: r.When, Errno: syscall.Errno(r.Errno), Why: r.Why})
	}
	if !reflect.DeepEqual(Rules(), rules) {
		t.Error("Rules differs from the assembled rules")
	}
	got := [4]any{native.arch, native.auditArch, native.maxSyscall, native.x32}
	if w := [4]any{want.Arch, want.AuditArch, want.MaxSyscall, want.X32}; got != w {
		t.Errorf("compiled-in arch, audit arch, highest syscall, x32 = %v, want %v", got, w)
	}
}
