//go:build linux || darwin

package holder

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInherited closes the descriptors above stderr that this process
// inherited across exec: whatever the harness that ran `airlock session
// start` leaked into it (a pipe it waits on, a file). A holder lives on,
// so a leaked write end would keep the harness waiting, or a file open,
// for the session's whole life. The Go runtime's own descriptors are
// all close-on-exec, and so are spared.
func closeInherited() {
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return
	}
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
}
