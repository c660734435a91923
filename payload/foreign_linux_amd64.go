package payload

import "golang.org/x/sys/unix"

// int80 makes an i386 system call with int $0x80 (foreign_linux_amd64.s).
func int80(trap uintptr) int64

// x32SyscallBit marks an x32 system call on amd64 (__X32_SYSCALL_BIT).
const x32SyscallBit = 0x40000000

// foreignCalls are getpid through each foreign ABI reachable from amd64.
var foreignCalls = map[string]func() int64{
	"int80": func() int64 { return int80(20) }, // i386 __NR_getpid
	"x32": func() int64 {
		r, _, e := unix.RawSyscall(x32SyscallBit|unix.SYS_GETPID, 0, 0, 0)
		if e != 0 {
			return -int64(e)
		}
		return int64(r)
	},
}
