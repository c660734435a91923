package payload

import (
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() { Register("udp-pin", udpPin) }

// udpPin queues datagrams on UDP sockets of the sandbox's own lo that
// nobody reads: up to args[0] sockets (default: as many as RLIMIT_NOFILE
// allows), each asking for a 4 MiB receive buffer and sent to until it is
// full. Socket buffers are kernel memory outside the process's own; it
// reports how much it could have queued (Detail: sockets, queued_bytes,
// the receive buffers' sum), how much the kernel holds for it (held_bytes,
// the sockets' receive memory as SO_MEMINFO gives it) and the errno that
// stopped it making sockets (stop), and holds it for args[1] seconds
// (default 5).
func udpPin(args []string) int {
	limit := int(argInt(args, 0, 1<<20))
	payload := make([]byte, 60000)
	socks, queued, held := 0, 0, 0
	stop := "limit"
	for socks < limit {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			stop = errnoName(err)
			break
		}
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
		if unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}) != nil {
			unix.Close(fd)
			break
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			break
		}
		socks++
		// A full receive buffer drops what comes: 200 datagrams fill
		// the 8 MiB the kernel gives for 4 MiB asked.
		for range 200 {
			if unix.Sendto(fd, payload, unix.MSG_DONTWAIT, sa) != nil {
				break
			}
		}
		if n, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil {
			queued += n
		}
		held += rmemAlloc(fd)
	}
	Emit(os.Stdout, Report{Attempt: "udp-pin", Evidence: "queued datagrams nobody reads",
		Detail: map[string]string{"sockets": strconv.Itoa(socks), "queued_bytes": strconv.Itoa(queued),
			"held_bytes": strconv.Itoa(held), "stop": stop}})
	time.Sleep(argSeconds(args, 1, 5))
	return ExitReported
}

// rmemAlloc is the receive memory the kernel holds for socket fd
// (SO_MEMINFO's SK_MEMINFO_RMEM_ALLOC, its first word), 0 if unknown.
func rmemAlloc(fd int) int {
	var info [9]uint32 // SK_MEMINFO_VARS
	size := uint32(unsafe.Sizeof(info))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	if e != 0 {
		return 0
	}
	return int(info[0])
}
