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

	ioctl, err := nr("ioctl")
	if err != nil {
		return nil, err
	}
	h = append(h, denyLowIn(ioctl, 1, refusedIoctls, retErrno(unix.EPERM))...)
	sock, err := nr("socket")
	if err != nil {
		return nil, err
	}
	block, err := socketBlock(sock)
	if err != nil {
		return nil, err
	}
	h = append(h, block...)
	pair, err := nr("socketpair")
	if err != nil {
		return nil, err
	}
	h = append(h, allowLowIn(pair, 0, socketpairFamilies, retErrno(unix.EAFNOSUPPORT))...)
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

// loadArgLow loads the low 32 bits of argument arg. Every architecture in
// GOARCHes is little-endian, so they are the first word of the argument.
func loadArgLow(arg uint32) bpf.Instruction {
	return bpf.LoadAbsolute{Off: offArgs + 8*arg, Size: 4}
}

// socketBlock returns the block of socket(2)'s allowlist: AF_UNIX is
// refused with EACCES; an inet family passes only with a (type,
// protocol) pair of socketInetTypes, else raw and packet types get EPERM
// and the rest EPROTONOSUPPORT; every other family gets EAFNOSUPPORT. An
// allowed call falls through to the next block:
//
//	ld nr; jne socket -> next
//	ld family; jeq AF_UNIX -> eacces; jeq AF_INET -> inet; jeq AF_INET6 -> inet; ret EAFNOSUPPORT
//	eacces: ret EACCES
//	inet: ld type; and SOCK_TYPE_MASK; jeq SOCK_STREAM -> t0; jeq SOCK_DGRAM -> t1
//	      jeq SOCK_RAW -> eperm; jeq SOCK_PACKET -> eperm; ret EPROTONOSUPPORT
//	eperm: ret EPERM
//	t0: ld protocol; jeq 0 -> next; jeq IPPROTO_TCP -> next; ret EPROTONOSUPPORT
//	t1: ld protocol; jeq 0 -> next; jeq IPPROTO_UDP -> next; ret EPROTONOSUPPORT
//	next:
func socketBlock(nr uint32) ([]bpf.Instruction, error) {
	const next = "next"
	var b labelled
	b.add(bpf.LoadAbsolute{Off: offNr, Size: 4})
	b.jump(bpf.JumpEqual, nr, "", next)
	b.add(loadArgLow(0))
	b.jump(bpf.JumpEqual, unix.AF_UNIX, "eacces", "")
	for i, f := range socketInetFamilies {
		if i < len(socketInetFamilies)-1 {
			b.jump(bpf.JumpEqual, f, "inet", "")
		} else {
			b.jump(bpf.JumpEqual, f, "inet", "eafnosupport")
		}
	}
	b.label("eafnosupport")
	b.add(bpf.RetConstant{Val: retErrno(unix.EAFNOSUPPORT)})
	b.label("eacces")
	b.add(bpf.RetConstant{Val: retErrno(unix.EACCES)})
	b.label("inet")
	b.add(loadArgLow(1), bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask})
	for i, t := range socketInetTypes {
		b.jump(bpf.JumpEqual, t.typ, "type"+strconv.Itoa(i), "")
	}
	for _, t := range refusedSocketTypes {
		b.jump(bpf.JumpEqual, t, "eperm", "")
	}
	b.add(bpf.RetConstant{Val: retErrno(unix.EPROTONOSUPPORT)})
	b.label("eperm")
	b.add(bpf.RetConstant{Val: retErrno(unix.EPERM)})
	for i, t := range socketInetTypes {
		b.label("type" + strconv.Itoa(i))
		b.add(loadArgLow(2))
		for _, p := range t.protocols {
			b.jump(bpf.JumpEqual, p, next, "")
		}
		b.add(bpf.RetConstant{Val: retErrno(unix.EPROTONOSUPPORT)})
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

// denyLowIn returns a block that, for syscall nr, returns ret when the low
// 32 bits of argument arg equal one of vals, and otherwise falls through
// to the next block:
//
//	ld nr; jne nr -> next; ld arg.lo; jeq v1 -> ret; ...; jne vn -> next; ret
func denyLowIn(nr, arg uint32, vals []uint32, ret uint32) []bpf.Instruction {
	body := []bpf.Instruction{loadArgLow(arg)}
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
