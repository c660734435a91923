package payload

import (
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The signal payloads attack the sandbox's init, pid 1 inside.
func init() {
	Register("signal-init", signalInit)
}

// signalWays are the ways signal-init sends a signal to pid 1: kill(2)
// (si_code SI_USER), rt_sigqueueinfo(2) and pidfd_send_signal(2) with a
// siginfo of SI_QUEUE (which the Go runtime does not take for a user's
// signal: a SIGSEGV so sent looks like a fault), and the F_SETSIG signal
// of a pipe whose owner is pid 1, sent by the kernel with POLL_IN.
var signalWays = map[string]func(sig int) error{
	"kill":  func(sig int) error { return unix.Kill(1, unix.Signal(sig)) },
	"queue": sigqueue,
	"pidfd": pidfdSignal,
	"sigio": sigio,
}

// signal-init [WAY...]: send every signal, 1 to 64, to pid 1 each way
// (default all), then check that pid 1 is still there. A crashed init
// takes the whole pid namespace, this payload included, with it: a report
// at all means the init survived, and the caller checks the run's result
// too. The signals the init forwards to its target come back here and are
// absorbed.
func signalInit(args []string) int {
	ways := args
	if len(ways) == 0 {
		ways = slices.Sorted(maps.Keys(signalWays))
	}
	for _, w := range ways {
		if signalWays[w] == nil {
			return usage("signal-init", "[kill|queue|pidfd|sigio]...")
		}
	}
	back := make(chan os.Signal, 256)
	signal.Notify(back)
	r := Report{Attempt: "signal-init", Detail: map[string]string{}}
	var seen []string
	for _, w := range ways {
		refused := map[string]int{}
		for sig := 1; sig <= 64; sig++ {
			if err := signalWays[w](sig); err != nil {
				refused[errnoName(err)]++
			}
		}
		r.Detail[w] = countErrnos(64, refused)
		seen = append(seen, w+": "+r.Detail[w])
	}
	// A crash is not instant: give the init time to die (and take this
	// process with it) before saying it did not.
	time.Sleep(200 * time.Millisecond)
	alive := unix.Kill(1, 0)
	r.Succeeded = alive != nil || os.Getppid() != 1
	r.Detail["initAlive"] = map[bool]string{true: "yes", false: errnoName(alive)}[alive == nil]
	r.Detail["forwardedBack"] = fmt.Sprint(len(back))
	r.Evidence = "signals 1-64 sent to pid 1 (" + strings.Join(seen, "; ") + "); pid 1 is still there"
	if r.Succeeded {
		r.Evidence = "pid 1 is gone after signals 1-64: " + strings.Join(seen, "; ")
	}
	return report(r)
}

// countErrnos says how many of n calls went through and how the others
// were refused.
func countErrnos(n int, refused map[string]int) string {
	sent := n
	var parts []string
	for e, c := range refused {
		sent -= c
		parts = append(parts, fmt.Sprintf("%d %s", c, e))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return fmt.Sprintf("%d sent", sent)
	}
	return fmt.Sprintf("%d sent, refused: %s", sent, strings.Join(parts, ", "))
}

// siginfo is the start of the kernel's siginfo_t for a queued signal
// (si_signo, si_errno, si_code, then si_pid and si_uid), padded to its
// size of 128 bytes.
type siginfo struct {
	signo, errno, code int32
	_                  int32 // the union is 8-byte aligned on 64-bit
	pid, uid           uint32
	_                  [104]byte
}

// siQueue is SI_QUEUE, the si_code of sigqueue(3).
const siQueue = -1

func queuedInfo(sig int) siginfo {
	return siginfo{signo: int32(sig), code: siQueue, pid: uint32(os.Getpid()), uid: uint32(os.Getuid())}
}

func sigqueue(sig int) error {
	info := queuedInfo(sig)
	_, _, e := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, 1, uintptr(sig), uintptr(unsafe.Pointer(&info)))
	return errnoErr(e)
}

func pidfdSignal(sig int) error {
	fd, err := unix.PidfdOpen(1, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	info := queuedInfo(sig)
	_, _, e := unix.Syscall6(unix.SYS_PIDFD_SEND_SIGNAL, uintptr(fd), uintptr(sig), uintptr(unsafe.Pointer(&info)), 0, 0, 0)
	return errnoErr(e)
}

// sigio makes pid 1 the owner of a pipe's read end with sig as its
// F_SETSIG signal, and writes to the pipe: the kernel sends sig to pid 1.
func sigio(sig int) error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, 1); err != nil {
		return err
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, sig); err != nil {
		return err
	}
	fl, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, fl|unix.O_ASYNC)
	}
	if err != nil {
		return err
	}
	_, err = unix.Write(p[1], []byte{0})
	return err
}
