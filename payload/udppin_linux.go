package payload

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func init() { Register("udp-pin", udpPin) }

// udpPin queues datagrams on UDP sockets of the sandbox's own lo that
// nobody reads: up to args[0] sockets (default: as many as RLIMIT_NOFILE
// allows), each asking for a 4 MiB receive buffer and sent to until it is
// full. Socket buffers are kernel memory outside the process's own; it
// reports how much it could have queued (Detail: sockets, queued_bytes, the
// receive buffers' sum) and holds it
// for args[1] seconds (default 5).
func udpPin(args []string) int {
	limit := int(argInt(args, 0, 1<<20))
	payload := make([]byte, 60000)
	socks, queued := 0, 0
	for socks < limit {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
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
	}
	Emit(os.Stdout, Report{Attempt: "udp-pin", Evidence: "queued datagrams nobody reads",
		Detail: map[string]string{"sockets": strconv.Itoa(socks), "queued_bytes": strconv.Itoa(queued)}})
	time.Sleep(argSeconds(args, 1, 5))
	return ExitReported
}
