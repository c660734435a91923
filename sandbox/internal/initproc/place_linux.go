package initproc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// placeSelf is the init's side: its main thread writes "0" to each tasks
// descriptor (fds first..first+n-1), which are then closed.
func placeSelf(first, n int) error {
	if unix.Gettid() != unix.Getpid() {
		return fmt.Errorf("move into the group: running on thread %d, not the leader", unix.Gettid())
	}
	for fd := first; fd < first+n; fd++ {
		_, err := unix.Write(fd, []byte("0"))
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("move into the group's v1 hierarchies: %w", err)
		}
	}
	return nil
}
