package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/payload"
	"golang.org/x/sys/unix"
)

// payloadEnv names the payload the test binary runs inside a sandbox.
const payloadEnv = "AIRLOCK_TEST_PAYLOAD"

// payloads are the programs tests run inside the sandbox, written in Go so
// that nothing needs installing: each prints one line and exits.
var payloads = map[string]func(args []string) int{
	"echo":    func(args []string) int { fmt.Println(args); return 0 },
	"probe":   payloadProbe,
	"attacks": payloadAttacks,
	"membomb": payloadMemBomb,
	"spin":    payloadSpin,
	"sleep":   func([]string) int { time.Sleep(time.Hour); return 0 },
	"fds":     payloadFDs,
	"fill":    payloadFill,
	"touch":   payloadTouch,
	"flood":   payloadFlood,
	"daemon":  payloadDaemon,
	"exit":    func([]string) int { return 7 },
	"dial":    payloadDial,
	"root":    payloadRoot,
	"files":   payloadFiles,
	"bytes":   payloadBytes,
	"entries": payloadEntries,
	// airlock runs one of airlock's own attack programs (package
	// payload), as selftest and the demo run them: args[0] names it.
	"airlock": func(args []string) int { return payload.Run(args[0], args[1:]) },
}

func runPayload(name string, args []string) int {
	p, ok := payloads[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown payload", name)
		return 100
	}
	return p(args)
}

// payloadProbe runs the start-up probes as the target and prints them.
func payloadProbe(args []string) int {
	req := ProbeRequest{}
	if len(args) > 0 {
		req.CanaryFile = args[0]
	}
	if len(args) > 1 {
		req.CanaryAddr = args[1]
	}
	json.NewEncoder(os.Stdout).Encode(Probe(req))
	return 0
}

// payloadAttacks tries escapes and prints name → errno ("" if it worked).
func payloadAttacks([]string) int {
	out := map[string]string{}
	try := func(name string, err error) {
		if err == nil {
			out[name] = ""
			return
		}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			out[name] = errno.Error()
		} else {
			out[name] = err.Error()
		}
	}
	try("write_usr", os.WriteFile("/usr/airlock-test", []byte("x"), 0o644))
	_, err := os.Stat("/root")
	try("stat_root", err)
	f, err := os.OpenFile("/proc/1/exe", os.O_RDONLY, 0)
	if err == nil {
		f.Close()
	}
	try("open_init_exe", err)
	f, err = os.OpenFile("/proc/self/exe", os.O_WRONLY, 0)
	if err == nil {
		f.Close()
	}
	try("write_self_exe", err)
	_, err = os.Readlink("/proc/1/root")
	try("init_root", err)
	try("ptrace_init", unix.PtraceAttach(1))
	try("mount", unix.Mount("tmpfs", "/tmp", "tmpfs", 0, ""))
	// A Go process is multi-threaded, where unshare(CLONE_NEWUSER) is
	// EINVAL anyway: try it the way a single-threaded attacker gets it,
	// a fresh child in a new user namespace.
	nested := exec.Command("/bin/true")
	nested.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
	try("clone_newuser", nested.Run())
	try("unshare_mount", unix.Unshare(unix.CLONE_NEWNS))
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	if err == nil {
		unix.Close(fd)
	}
	try("raw_socket", err)
	fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err == nil {
		unix.Close(fd)
	}
	try("packet_socket", err)
	fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	if err == nil {
		unix.Close(fd)
	}
	try("netlink_socket", err)
	try("sysctl_write", os.WriteFile("/proc/sys/kernel/hostname", []byte("x"), 0))
	try("setuid_root", unix.Setuid(0))
	try("chroot", unix.Chroot("/tmp"))
	try("keyctl", func() error {
		_, err := unix.KeyctlJoinSessionKeyring("airlock-test")
		return err
	}())
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

// payloadFiles prints, as JSON, each named file's content, or the error
// reading it gave as "error: ...".
func payloadFiles(args []string) int {
	out := map[string]string{}
	for _, p := range args {
		b, err := os.ReadFile(p)
		if err != nil {
			out[p] = "error: " + err.Error()
			continue
		}
		out[p] = string(b)
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

// payloadMemBomb touches memory until something stops it.
func payloadMemBomb([]string) int {
	var keep [][]byte
	for {
		b := make([]byte, 16<<20)
		for i := range b {
			if i%4096 == 0 {
				b[i] = 1
			}
		}
		keep = append(keep, b)
		sink = len(keep)
	}
}

// sink keeps the memory bomb's allocations alive.
var sink int

// payloadSpin burns CPU until something stops it.
func payloadSpin([]string) int {
	x := 0
	for {
		x++
		sink = x
	}
}

// payloadFDs opens descriptors until refused and prints how many.
func payloadFDs([]string) int {
	n := 0
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0)
		if err != nil {
			fmt.Printf("%d %v\n", n, err)
			return 0
		}
		_ = fd
		n++
		if n > 1<<20 {
			return 1
		}
	}
}

// payloadFill writes 1 MiB files under args[0] until refused.
func payloadFill(args []string) int {
	buf := make([]byte, 1<<20)
	for i := 0; ; i++ {
		err := os.WriteFile(fmt.Sprintf("%s/f%d", args[0], i), buf, 0o644)
		if err != nil {
			fmt.Printf("%d %v\n", i, errors.Unwrap(err))
			return 3
		}
	}
}

// payloadTouch makes empty files under args[0] until refused (at most
// 200,000) and prints how many and why it stopped.
func payloadTouch(args []string) int {
	for i := 0; i < 200000; i++ {
		fd, err := unix.Open(fmt.Sprintf("%s/e%d", args[0], i), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			fmt.Printf("%d %v\n", i, err)
			return 3
		}
		unix.Close(fd)
	}
	fmt.Println("200000 made")
	return 0
}

// payloadFlood writes 64 KiB blocks to stdout and stderr in turn, at most
// args[0] MiB (default 4096), as fast as the pipes take them.
func payloadFlood(args []string) int {
	limit := 4096
	if len(args) > 0 {
		fmt.Sscan(args[0], &limit)
	}
	block := make([]byte, 64<<10)
	for i := range block {
		block[i] = 'x'
	}
	for i := 0; i < limit*16; i++ {
		fd := 1 + i%2
		if _, err := unix.Write(fd, block); err != nil {
			return 3
		}
	}
	return 0
}

// payloadDaemon leaves a double-forked, setsid sleeper behind and exits.
func payloadDaemon(args []string) int {
	cmd := exec.Command("/bin/sh", "-c", "(setsid /bin/sleep "+args[0]+" </dev/null >/dev/null 2>&1 &)")
	if err := cmd.Run(); err != nil {
		fmt.Println("daemon:", err)
		return 1
	}
	fmt.Println("daemonized")
	return 0
}
