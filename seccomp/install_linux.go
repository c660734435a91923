package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install sets no_new_privs and installs the filter on every thread of the
// calling process (SECCOMP_FILTER_FLAG_TSYNC; the kernel also carries
// no_new_privs to the other threads). It is irreversible: the filter holds
// for the process and every process it starts. Install locks the calling
// goroutine to its thread for the two calls, so it may be called from a
// goroutine that has already locked its thread, as a re-exec'd init does.
//
// The program was assembled when airlock was built (see the package
// documentation): Install only hands it to the kernel, and itself uses no
// refused call. After it, clone3 fails with ENOSYS: a Go program that sets
// SysProcAttr.UseCgroupFD cannot start children.
func Install() error { return install(native.filter) }

// InstallNoNetNS installs, as Install does, the second filter, for a
// sandbox that has no network namespace of its own: it refuses UDP
// sockets and listen(2) (NoNetNSRules; docs/sandbox.md, "Inside a
// container"). It narrows what Install's filter allows and is installed
// after it.
func InstallNoNetNS() error { return install(native.noNetNSFilter) }

// InstallNoMemoryCgroup installs, as Install does, the third filter, for
// a sandbox without a memory cgroup: shmget, msgget and semget fail with
// ENOSYS and UDP sockets with EACCES, kernel memory that nothing would
// count there (NoMemoryCgroupRules; docs/sandbox.md, "Caps"). It narrows
// what Install's filter allows and is installed after it.
func InstallNoMemoryCgroup() error { return install(native.noMemcgFilter) }

// install installs filter on every thread.
func install(filter []unix.SockFilter) error {
	if filter == nil {
		return errNoFilter()
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// no_new_privs is per thread; seccomp requires it on the calling thread
	// (or CAP_SYS_ADMIN), and TSYNC copies it to the others.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: set no_new_privs: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	switch {
	case errno == unix.ENOSYS || errno == unix.EINVAL && !Available():
		return fmt.Errorf("seccomp: install filter: kernel has no seccomp filter mode: %w", errno)
	case errno != 0:
		return fmt.Errorf("seccomp: install filter: %w", errno)
	case r != 0:
		// With TSYNC, a positive return is the id of a thread that could
		// not be synchronised (it runs under a diverging filter).
		return fmt.Errorf("seccomp: install filter: thread %d could not take the filter: %w", r, errTSync)
	}
	return nil
}

var errTSync = errors.New("TSYNC failed")

// Available reports whether this kernel can install the filter: seccomp
// filter mode with the KILL_PROCESS action it uses (Linux 4.14 and later).
func Available() bool {
	action := uint32(unix.SECCOMP_RET_KILL_PROCESS)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	return errno == 0
}
