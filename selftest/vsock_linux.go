package selftest

import "golang.org/x/sys/unix"

// planVsock calibrates on the host first: where the host's kernel has no
// AF_VSOCK, its EAFNOSUPPORT cannot be told from the filter's, and the
// attempt says so instead of claiming the filter.
func planVsock(*fixtures) (*plan, error) {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	judge := errnoIs("EAFNOSUPPORT")
	if err == unix.EAFNOSUPPORT {
		judge = func(*observation) verdict {
			return skipped("the host's kernel has no AF_VSOCK (EAFNOSUPPORT outside the sandbox too): the filter's refusal cannot be told from the kernel's")
		}
	}
	return &plan{req: payloadRequest(toolPayload, taskNone, "socket", "vsock"), judge: judge}, nil
}
