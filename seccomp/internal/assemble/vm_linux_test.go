package assemble

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData is struct seccomp_data.
type seccompData struct {
	nr   uint32
	arch uint32
	ip   uint64
	args [6]uint64
}

// vmInput encodes d for golang.org/x/net/bpf's VM as a little-endian
// kernel lays it out (every architecture in GOARCHes is little-endian);
// the VM loads words big-endian, so each 32-bit word is written
// big-endian, and every aligned load in the VM sees what the kernel sees.
func vmInput(d seccompData) []byte {
	le := make([]byte, 64)
	binary.LittleEndian.PutUint32(le[0:], d.nr)
	binary.LittleEndian.PutUint32(le[4:], d.arch)
	binary.LittleEndian.PutUint64(le[8:], d.ip)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(le[16+8*i:], a)
	}
	out := make([]byte, len(le))
	for i := 0; i < len(le); i += 4 {
		binary.BigEndian.PutUint32(out[i:], binary.LittleEndian.Uint32(le[i:]))
	}
	return out
}

// newVM returns a VM running prog.
func newVM(t testing.TB, prog []bpf.Instruction) *bpf.VM {
	t.Helper()
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("the VM rejects the filter: %v", err)
	}
	return vm
}

// run returns the filter's action for d.
func run(t testing.TB, vm *bpf.VM, d seccompData) uint32 {
	t.Helper()
	r, err := vm.Run(vmInput(d))
	if err != nil {
		t.Fatalf("VM: %v", err)
	}
	return uint32(r)
}

// actionName spells a filter return value for test messages.
func actionName(r uint32) string {
	switch r & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return "ALLOW"
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "KILL_PROCESS"
	case unix.SECCOMP_RET_ERRNO:
		return fmt.Sprintf("ERRNO(%s)", unix.ErrnoName(unix.Errno(r&unix.SECCOMP_RET_DATA)))
	}
	return fmt.Sprintf("%#x", r)
}
