package payload

import (
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() { Register("inotify-hog", inotifyHog) }

// inotifyHog makes inotify instances until the kernel refuses one, and
// watches on them until it refuses one, then holds them for args[0]
// seconds (default 5). The kernel counts both per user, at every level of
// user namespaces up to the host's: a sandbox that takes them all would
// leave none to whoever owns its namespace on the host. It reports how
// many it got (Detail: instances, watches, and the errno of each stop).
func inotifyHog(args []string) int {
	d := map[string]string{}
	var fds []int
	for len(fds) < 100000 {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			d["instances_stop"] = errnoName(err)
			break
		}
		fds = append(fds, fd)
	}
	// Every instance watches every directory: each is a watch of its own.
	watches := 0
	dir := os.TempDir()
watch:
	for i := 0; len(fds) > 0 && watches < 1000000; i++ {
		p := dir + "/w" + strconv.Itoa(i)
		if err := os.Mkdir(p, 0o700); err != nil {
			d["watches_stop"] = "mkdir " + errnoName(err)
			break
		}
		for _, fd := range fds {
			if _, err := unix.InotifyAddWatch(fd, p, unix.IN_CREATE); err != nil {
				d["watches_stop"] = errnoName(err)
				break watch
			}
			watches++
		}
	}
	d["instances"], d["watches"] = strconv.Itoa(len(fds)), strconv.Itoa(watches)
	Emit(os.Stdout, Report{Attempt: "inotify-hog", Evidence: "took inotify instances and watches", Detail: d})
	time.Sleep(argSeconds(args, 0, 5))
	return ExitReported
}

func init() { Register("rt-signals", rtSignals) }

// rtSignals blocks SIGRTMIN and queues it to itself until the kernel
// refuses one (RLIMIT_SIGPENDING: counted per user, the sandbox's owner's
// on the host included), then holds them for args[0] seconds (default 5).
// It reports how many were queued (Detail: queued, stop).
func rtSignals(args []string) int {
	d := map[string]string{}
	sig := unix.Signal(34) // SIGRTMIN
	set := unix.Sigset_t{}
	set.Val[(int(sig)-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
		d["stop"] = "sigmask " + errnoName(err)
	}
	runtime.LockOSThread()
	tid, pid := unix.Gettid(), os.Getpid()
	queued := 0
	var info [128]byte // siginfo_t: signo, errno, code (SI_QUEUE), ...
	*(*int32)(unsafe.Pointer(&info[0])) = int32(sig)
	*(*int32)(unsafe.Pointer(&info[8])) = -1 // SI_QUEUE
	for queued < 10000000 {
		_, _, e := unix.Syscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(pid), uintptr(tid), uintptr(sig), uintptr(unsafe.Pointer(&info[0])), 0, 0)
		if e != 0 {
			d["stop"] = errnoName(e)
			break
		}
		queued++
	}
	d["queued"] = strconv.Itoa(queued)
	Emit(os.Stdout, Report{Attempt: "rt-signals", Evidence: "queued real-time signals to itself", Detail: d})
	time.Sleep(argSeconds(args, 0, 5))
	return ExitReported
}
