package bpfvm

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Data is struct seccomp_data.
type Data struct {
	Nr   uint32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// Input encodes d for the VM as a little-endian kernel lays it out (every
// architecture airlock builds a filter for is little-endian). The VM loads
// words big-endian, so each 32-bit word is written big-endian, and every
// aligned load in the VM sees what the kernel sees.
func Input(d Data) []byte {
	le := make([]byte, 64)
	binary.LittleEndian.PutUint32(le[0:], d.Nr)
	binary.LittleEndian.PutUint32(le[4:], d.Arch)
	binary.LittleEndian.PutUint64(le[8:], d.IP)
	for i, a := range d.Args {
		binary.LittleEndian.PutUint64(le[16+8*i:], a)
	}
	out := make([]byte, len(le))
	for i := 0; i < len(le); i += 4 {
		binary.BigEndian.PutUint32(out[i:], binary.LittleEndian.Uint32(le[i:]))
	}
	return out
}

// New returns a VM running prog; t fails if the VM rejects it.
func New(t testing.TB, prog []bpf.Instruction) *bpf.VM {
	t.Helper()
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("the VM rejects the filter: %v", err)
	}
	return vm
}

// Run returns the filter's action for d.
func Run(t testing.TB, vm *bpf.VM, d Data) uint32 {
	t.Helper()
	r, err := vm.Run(Input(d))
	if err != nil {
		t.Fatalf("VM: %v", err)
	}
	return uint32(r)
}

// ActionName spells a filter return value for test messages.
func ActionName(r uint32) string {
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
