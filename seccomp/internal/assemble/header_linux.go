package assemble

import (
	"fmt"

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

// Return values of the filter.
const (
	retAllow = uint32(unix.SECCOMP_RET_ALLOW)
	retKill  = uint32(unix.SECCOMP_RET_KILL_PROCESS)
)

// retErrno is the filter's return value that fails the call with errno.
func retErrno(errno unix.Errno) uint32 {
	return uint32(unix.SECCOMP_RET_ERRNO) | uint32(errno)&uint32(unix.SECCOMP_RET_DATA)
}

// maxSyscall returns the highest syscall number in the table.
func maxSyscall(info *arch.Info) uint32 {
	var hi int
	for nr := range info.SyscallNumbers {
		hi = max(hi, nr)
	}
	return uint32(hi)
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
// Every jump in it is short and forward; each block ends in its own
// return or falls through to the next block, which reloads the syscall
// number. The last block may leave an argument in A: Build reloads the
// number before the library's program.
func header(info *arch.Info) ([]bpf.Instruction, error) {
	nr := func(name string) (uint32, error) {
		n, ok := info.SyscallNames[name]
		if !ok {
			return 0, fmt.Errorf("assemble: syscall %q is not in the %s table", name, info.Name)
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

	for _, r := range argRules {
		if r.byLibrary {
			continue
		}
		n, err := nr(r.Syscall)
		if err != nil {
			return nil, err
		}
		ret := retErrno(r.Errno)
		switch r.test {
		case refuseIn:
			h = append(h, denyLowIn(n, r.arg, r.mask, r.vals, ret)...)
		case refuseUnlessIn:
			h = append(h, allowLowIn(n, r.arg, r.vals, ret)...)
		case refuseBits:
			h = append(h, denyLowBits(n, r.arg, r.vals[0], ret)...)
		default:
			return nil, fmt.Errorf("assemble: %s: unknown argument test %d", r.Syscall, r.test)
		}
	}
	return h, nil
}

// loadArgLow loads the low 32 bits of argument arg. Every architecture in
// GOARCHes is little-endian, so they are the first word of the argument.
func loadArgLow(arg uint32) bpf.Instruction {
	return bpf.LoadAbsolute{Off: offArgs + 8*arg, Size: 4}
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
