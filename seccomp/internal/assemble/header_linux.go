package assemble

import (
	"fmt"
	"strconv"

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
		block, err := ruleBlock(n, r)
		if err != nil {
			return nil, err
		}
		h = append(h, block...)
	}
	return h, nil
}

// loadArgLow loads the low 32 bits of argument arg. Every architecture in
// GOARCHes is little-endian, so they are the first word of the argument.
func loadArgLow(arg uint32) bpf.Instruction {
	return bpf.LoadAbsolute{Off: offArgs + 8*arg, Size: 4}
}

// ruleBlock returns the block of r for syscall nr: each clause's
// conditions in turn, a failed one jumping to the next clause; a clause
// whose every condition holds returns r's errno. A call that no clause
// matches falls through to the next block:
//
//	ld nr; jne nr -> next
//	c0: ld arg; [and mask]; test, else -> c1; ...; ret errno
//	c1: ...; ret errno
//	next:
func ruleBlock(nr uint32, r argRule) ([]bpf.Instruction, error) {
	const next = "next"
	clause := func(i int) string {
		if i == len(r.clauses) {
			return next
		}
		return "c" + strconv.Itoa(i)
	}
	var b labelled
	b.add(bpf.LoadAbsolute{Off: offNr, Size: 4})
	b.jump(bpf.JumpEqual, nr, "", next)
	for i, conds := range r.clauses {
		b.label(clause(i))
		fail := clause(i + 1)
		for j, c := range conds {
			if len(c.vals) == 0 {
				return nil, fmt.Errorf("assemble: %s: a condition without values", r.Syscall)
			}
			b.add(loadArgLow(c.arg))
			if c.mask != 0 {
				b.add(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.mask})
			}
			pass := "p" + strconv.Itoa(i) + "." + strconv.Itoa(j)
			switch c.test {
			case oneOf:
				for k, v := range c.vals {
					if k < len(c.vals)-1 {
						b.jump(bpf.JumpEqual, v, pass, "")
					} else {
						b.jump(bpf.JumpEqual, v, "", fail)
					}
				}
			case noneOf:
				for _, v := range c.vals {
					b.jump(bpf.JumpEqual, v, fail, "")
				}
			case anyBit:
				b.jump(bpf.JumpBitsSet, c.vals[0], "", fail)
			default:
				return nil, fmt.Errorf("assemble: %s: unknown argument test %d", r.Syscall, c.test)
			}
			b.label(pass)
		}
		b.add(bpf.RetConstant{Val: retErrno(r.Errno)})
	}
	b.label(next)
	return b.resolve()
}

// labelled is a block of instructions whose jumps name forward labels,
// resolved into short skips by resolve. The library's assembler has
// labels too, but no ALU instruction (the type mask).
type labelled struct {
	ins    []bpf.Instruction
	labels map[string]int
	jumps  []labelledJump
}

// labelledJump is a jump at index at to the labels t (true) and f
// (false); "" is the next instruction.
type labelledJump struct {
	at   int
	t, f string
}

func (b *labelled) add(ins ...bpf.Instruction) { b.ins = append(b.ins, ins...) }

func (b *labelled) label(name string) {
	if b.labels == nil {
		b.labels = map[string]int{}
	}
	b.labels[name] = len(b.ins)
}

func (b *labelled) jump(cond bpf.JumpTest, val uint32, t, f string) {
	b.jumps = append(b.jumps, labelledJump{at: len(b.ins), t: t, f: f})
	b.add(bpf.JumpIf{Cond: cond, Val: val})
}

// resolve sets every jump's skips; a label that is unknown, behind the
// jump or beyond a short jump's reach is an error.
func (b *labelled) resolve() ([]bpf.Instruction, error) {
	skip := func(at int, name string) (uint8, error) {
		if name == "" {
			return 0, nil
		}
		to, ok := b.labels[name]
		switch {
		case !ok:
			return 0, fmt.Errorf("assemble: jump to unknown label %q", name)
		case to <= at || to-at-1 > 255:
			return 0, fmt.Errorf("assemble: jump from %d to label %q at %d is not a short forward jump", at, name, to)
		}
		return uint8(to - at - 1), nil
	}
	for _, j := range b.jumps {
		ins := b.ins[j.at].(bpf.JumpIf)
		var err error
		if ins.SkipTrue, err = skip(j.at, j.t); err != nil {
			return nil, err
		}
		if ins.SkipFalse, err = skip(j.at, j.f); err != nil {
			return nil, err
		}
		b.ins[j.at] = ins
	}
	return b.ins, nil
}
