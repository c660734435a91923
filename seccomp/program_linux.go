package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"

	libseccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// x32SyscallBit is __X32_SYSCALL_BIT: on amd64, an x32 call carries the
// native audit arch and this bit in its number.
const x32SyscallBit = 0x40000000

// maxInstructions is BPF_MAXINSNS, the kernel's limit for one filter.
const maxInstructions = 4096

// Return values of the filter.
const (
	retAllow = uint32(unix.SECCOMP_RET_ALLOW)
	retKill  = uint32(unix.SECCOMP_RET_KILL_PROCESS)
)

// retErrno is the filter's return value that fails the call with errno.
func retErrno(errno unix.Errno) uint32 {
	return uint32(unix.SECCOMP_RET_ERRNO) | uint32(errno)&uint32(unix.SECCOMP_RET_DATA)
}

// nativeArch returns the library's syscall table for this process's
// architecture.
func nativeArch() (*arch.Info, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: no syscall table for %s: %w", runtime.GOARCH, err)
	}
	return info, nil
}

// maxSyscall returns the highest syscall number in the table.
func maxSyscall(info *arch.Info) uint32 {
	var hi int
	for nr := range info.SyscallNumbers {
		hi = max(hi, nr)
	}
	return uint32(hi)
}

var program = sync.OnceValues(assemble)

// Program returns the filter as BPF instructions for this architecture.
func Program() ([]bpf.Instruction, error) {
	p, err := program()
	return slices.Clone(p), err
}

// assemble builds the program: the hand-written header, then the library's
// program for the name rules and the clone flag rule.
func assemble() ([]bpf.Instruction, error) {
	info, err := nativeArch()
	if err != nil {
		return nil, err
	}
	head, err := header(info)
	if err != nil {
		return nil, err
	}
	groups, err := libraryGroups(info)
	if err != nil {
		return nil, err
	}
	pol := libseccomp.Policy{DefaultAction: libseccomp.ActionAllow, Syscalls: groups}
	body, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble rules: %w", err)
	}
	prog := append(head, body...)
	if len(prog) > maxInstructions {
		return nil, fmt.Errorf("seccomp: filter has %d instructions, the kernel takes at most %d", len(prog), maxInstructions)
	}
	return prog, nil
}

// libraryGroups turns the name rules and the clone rule into the library's
// syscall groups. The library fails a group's action of ActionErrno with
// EPERM; any other errno is passed as the action's data bits, which the
// library emits unchanged (checked by the VM tests).
func libraryGroups(info *arch.Info) ([]libseccomp.SyscallGroup, error) {
	var groups []libseccomp.SyscallGroup
	for _, r := range nameRules {
		var names []string
		for _, n := range r.names {
			if _, ok := info.SyscallNames[n]; !ok {
				if archOptional[n] {
					continue // this architecture never had the call
				}
				return nil, fmt.Errorf("seccomp: syscall %q is not in the %s table", n, info.Name)
			}
			names = append(names, n)
		}
		groups = append(groups, libseccomp.SyscallGroup{
			Names:  names,
			Action: libseccomp.Action(retErrno(r.errno)),
		})
	}
	// clone's flags are an unsigned long of which the kernel reads the low
	// 32 bits; the mask's high half is zero, so the library's 64-bit
	// BitsSet test is exactly the kernel's view.
	groups = append(groups, libseccomp.SyscallGroup{
		NamesWithCondtions: []libseccomp.NameWithConditions{{
			Name: "clone",
			Conditions: libseccomp.ArgumentConditions{{
				Argument: 0, Operation: libseccomp.BitsSet, Value: cloneNamespaceFlags,
			}},
		}},
		Action: libseccomp.Action(retErrno(unix.EPERM)),
	})
	return groups, nil
}

// header is the hand-written start of the filter. The library cannot
// express it: on an architecture mismatch it takes the default action
// (allow), it answers x32 calls with ENOSYS, and its argument tests compare
// 64 bits, so a deny-on-equal test of an int argument is bypassed by
// setting the high half, which the kernel ignores (CVE-2019-10063).
//
//	ld arch; if != native: KILL_PROCESS
//	ld nr;   amd64: if nr >= X32 bit and nr != -1: KILL_PROCESS
//	         if nr > highest in table: ERRNO(ENOSYS)
//	then one block per argument rule, each testing the low 32 bits only.
//
// Every jump in it is short and forward; each block ends in its own return,
// so the library's program that follows starts from a clean slate (it
// reloads arch and nr itself).
func header(info *arch.Info) ([]bpf.Instruction, error) {
	nr := func(name string) (uint32, error) {
		n, ok := info.SyscallNames[name]
		if !ok {
			return 0, fmt.Errorf("seccomp: syscall %q is not in the %s table", name, info.Name)
		}
		return uint32(n), nil
	}
	h := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if info.ID == arch.X86_64.ID {
		// nr == -1 is let through to the ENOSYS test below: the kernel
		// treats it as "no call" (a tracer's skip), never as x32.
		h = append(h,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 2},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0xffffffff, SkipTrue: 1},
			bpf.RetConstant{Val: retKill},
		)
	}
	h = append(h,
		bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: maxSyscall(info), SkipFalse: 1},
		bpf.RetConstant{Val: retErrno(unix.ENOSYS)},
	)

	ioctl, err := nr("ioctl")
	if err != nil {
		return nil, err
	}
	h = append(h, denyLowIn(ioctl, 1, 0, refusedIoctls, retErrno(unix.EPERM))...)
	for _, name := range []string{"socket", "socketpair"} {
		n, err := nr(name)
		if err != nil {
			return nil, err
		}
		h = append(h, allowLowIn(n, 0, allowedFamilies, retErrno(unix.EAFNOSUPPORT))...)
		h = append(h, denyLowIn(n, 1, sockTypeMask, refusedSocketTypes, retErrno(unix.EPERM))...)
	}
	// TCP Fast Open connects from sendto/sendmsg without connect(2), so
	// Landlock's connect rule (only the proxy's port) never sees it.
	for _, c := range fastOpenCalls {
		n, err := nr(c.name)
		if err != nil {
			return nil, err
		}
		h = append(h, denyLowBits(n, c.flagsArg, unix.MSG_FASTOPEN, retErrno(unix.EPERM))...)
	}
	pers, err := nr("personality")
	if err != nil {
		return nil, err
	}
	h = append(h, allowLowIn(pers, 0, allowedPersonalities, retErrno(unix.EPERM))...)
	return h, nil
}

// loadArgLow loads the low 32 bits of argument arg, at the offset the
// kernel stores them in native byte order.
func loadArgLow(arg uint32) bpf.Instruction {
	off := offArgs + 8*arg
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 { // big-endian
		off += 4
	}
	return bpf.LoadAbsolute{Off: off, Size: 4}
}

// denyLowIn returns a block that, for syscall nr, returns ret when the low
// 32 bits of argument arg (ANDed with mask when mask is not 0) equal one of
// vals, and otherwise falls through to the next block:
//
//	ld nr; jne nr -> next; ld arg.lo; [and mask]; jeq v1 -> ret; ...; jne vn -> next; ret
func denyLowIn(nr, arg, mask uint32, vals []uint32, ret uint32) []bpf.Instruction {
	var body []bpf.Instruction
	body = append(body, loadArgLow(arg))
	if mask != 0 {
		body = append(body, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: mask})
	}
	for i, v := range vals {
		if i < len(vals)-1 {
			body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(vals) - 1 - i)})
		} else {
			body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipFalse: 1})
		}
	}
	body = append(body, bpf.RetConstant{Val: ret})
	return guard(nr, body)
}

// denyLowBits returns a block that, for syscall nr, returns ret when the
// low 32 bits of argument arg have any bit of mask set, and otherwise falls
// through to the next block:
//
//	ld nr; jne nr -> next; ld arg.lo; jset mask -> ret; next
func denyLowBits(nr, arg, mask, ret uint32) []bpf.Instruction {
	return guard(nr, []bpf.Instruction{
		loadArgLow(arg),
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: mask, SkipFalse: 1},
		bpf.RetConstant{Val: ret},
	})
}

// allowLowIn returns a block that, for syscall nr, returns ret unless the
// low 32 bits of argument arg equal one of vals, in which case it falls
// through to the next block:
//
//	ld nr; jne nr -> next; ld arg.lo; jeq v1 -> next; ...; jeq vn -> next; ret
func allowLowIn(nr, arg uint32, vals []uint32, ret uint32) []bpf.Instruction {
	body := []bpf.Instruction{loadArgLow(arg)}
	for i, v := range vals {
		body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(vals) - i)})
	}
	body = append(body, bpf.RetConstant{Val: ret})
	return guard(nr, body)
}

// guard prefixes body with "load nr; if nr is not this syscall, skip body".
func guard(nr uint32, body []bpf.Instruction) []bpf.Instruction {
	return append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: uint8(len(body))},
	}, body...)
}
