package limits

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the processes the tests contain: with
// LIMITS_PAYLOAD set, TestMain runs that payload instead of the tests. A
// payload first waits for one byte on fd 3 (the gate), which the test
// writes once it has placed the process in the group, then applies the
// rlimits in LIMITS_RLIMITS (as the sandbox's init does), then works.

const (
	envPayload = "LIMITS_PAYLOAD"
	envRlimits = "LIMITS_RLIMITS"
)

func TestMain(m *testing.M) {
	if p := os.Getenv(envPayload); p != "" {
		os.Exit(runPayload(p, os.Args[1:]))
	}
	os.Exit(m.Run())
}

var payloads = map[string]func(args []string) int{
	"sleep":     func([]string) int { time.Sleep(time.Hour); return 0 },
	"exec":      payloadExec,
	"membomb":   payloadMemBomb,
	"spin":      payloadSpin,
	"threads":   payloadThreads,
	"fds":       payloadFDs,
	"fsize":     payloadFsize,
	"orphans":   payloadOrphans,
	"orphanmid": payloadOrphanMid,
}

func runPayload(name string, args []string) int {
	if os.Getenv("LIMITS_NOGATE") == "" {
		gate := os.NewFile(3, "gate")
		b := make([]byte, 1)
		if n, _ := gate.Read(b); n != 1 {
			fmt.Fprintln(os.Stderr, "payload: gate closed before the go byte")
			return 100
		}
		gate.Close()
	}
	if s := os.Getenv(envRlimits); s != "" {
		var rl []Rlimit
		if err := json.Unmarshal([]byte(s), &rl); err != nil {
			fmt.Fprintln(os.Stderr, "payload:", err)
			return 101
		}
		for _, r := range rl { // as the sandbox's init sets them
			if err := syscall.Setrlimit(r.Resource, &syscall.Rlimit{Cur: r.Cur, Max: r.Max}); err != nil {
				fmt.Fprintln(os.Stderr, "payload: setrlimit", r.Name, err)
				return 102
			}
		}
	}
	f, ok := payloads[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "payload: unknown", name)
		return 103
	}
	return f(args)
}

// payloadExec replaces itself with args, as the sandbox's init does.
func payloadExec(args []string) int {
	err := syscall.Exec(args[0], args, os.Environ())
	fmt.Fprintln(os.Stderr, "payload: exec:", err)
	return 104
}

// payloadMemBomb allocates and touches memory until killed.
func payloadMemBomb([]string) int {
	var hold [][]byte
	for {
		b := make([]byte, 4<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		hold = append(hold, b)
		if len(hold) > 1<<14 {
			return 0 // 64 GiB touched: the cap did not hold
		}
	}
}

// payloadSpin burns CPU on every core until killed.
func payloadSpin([]string) int {
	for range runtime.NumCPU() - 1 {
		go spin()
	}
	spin()
	return 0
}

var spins atomic.Uint64

func spin() {
	for {
		spins.Add(1)
	}
}

// payloadThreads starts OS threads until it cannot.
func payloadThreads([]string) int {
	for {
		go func() {
			runtime.LockOSThread()
			select {}
		}()
		time.Sleep(100 * time.Microsecond)
	}
}

// payloadFDs opens files until refused and prints how many it opened and
// the error.
func payloadFDs([]string) int {
	n := 0
	for {
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			fmt.Printf("%d %v\n", n, err)
			return 0
		}
		_ = fd
		n++
		if n > 1<<20 {
			fmt.Println("unbounded")
			return 1
		}
	}
}

// payloadFsize writes args[0] until the kernel stops it.
func payloadFsize(args []string) int {
	f, err := os.Create(args[0])
	if err != nil {
		return 105
	}
	buf := make([]byte, 64<<10)
	for range 1 << 14 { // 1 GiB at most
		if _, err := f.Write(buf); err != nil {
			fmt.Println("write error:", err)
			return 3
		}
	}
	return 0
}

// payloadOrphans leaves two sleepers behind and exits: one double-forked
// (its parent exits at once) and one in a session of its own. It prints
// their pids.
func payloadOrphans([]string) int {
	mid := exec.Command(os.Args[0])
	mid.Env = append(os.Environ(), envPayload+"=orphanmid", "LIMITS_NOGATE=1", envRlimits+"=")
	out, err := mid.Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "payload: mid:", err)
		return 106
	}
	s := sleeperCmd()
	s.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := s.Start(); err != nil {
		return 107
	}
	fmt.Printf("%s %d\n", out, s.Process.Pid)
	return 0
}

// payloadOrphanMid starts a sleeper, prints its pid and exits.
func payloadOrphanMid([]string) int {
	s := sleeperCmd()
	if err := s.Start(); err != nil {
		return 108
	}
	fmt.Print(strconv.Itoa(s.Process.Pid))
	return 0
}

func sleeperCmd() *exec.Cmd {
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), envPayload+"=sleep", "LIMITS_NOGATE=1", envRlimits+"=")
	return c
}
