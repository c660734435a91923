package seccomp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/seccomp/internal/foreignabi"
)

// childEnv selects what a re-executed test binary does (see TestMain).
const childEnv = "AIRLOCK_SECCOMP_TEST_CHILD"

// TestMain runs the test binary as a child process when childEnv is set:
// installing a filter is irreversible, so every real test installs it in
// a child of its own.
func TestMain(m *testing.M) {
	if scenario := os.Getenv(childEnv); scenario != "" {
		os.Exit(runChild(scenario))
	}
	os.Exit(m.Run())
}

// runChild runs one scenario and returns the exit status. Scenarios that
// expect to be killed by the filter report survival as status 3.
func runChild(scenario string) int {
	// A kill by the filter dumps core by default; never leave one behind.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		fmt.Fprintln(os.Stderr, "child: rlimit core:", err)
		return 2
	}
	install := func() bool {
		if err := Install(); err != nil {
			fmt.Fprintln(os.Stderr, "child: install:", err)
			return false
		}
		return true
	}
	switch scenario {
	case "probe-filtered", "probe-control", "probe-nonetns", "probe-nomemcg":
		if scenario != "probe-control" && !install() {
			return 2
		}
		if scenario == "probe-nomemcg" {
			if err := InstallNoMemoryCgroup(); err != nil {
				fmt.Fprintln(os.Stderr, "child: install the third filter:", err)
				return 2
			}
		}
		if scenario == "probe-nonetns" {
			if err := InstallNoNetNS(); err != nil {
				fmt.Fprintln(os.Stderr, "child: install the second filter:", err)
				return 2
			}
		}
		out, err := json.Marshal(runProbes(scenario != "probe-control"))
		if err != nil {
			return 2
		}
		os.Stdout.Write(out)
		return 0
	case "workload":
		if !install() {
			return 2
		}
		if err := workload(); err != nil {
			fmt.Fprintln(os.Stderr, "child: workload:", err)
			return 1
		}
		return 0
	case "x32":
		if !install() {
			return 2
		}
		r, _, errno := unix.RawSyscall(x32SyscallBit|unix.SYS_GETPID, 0, 0, 0)
		fmt.Printf("x32 getpid survived: %d %v\n", r, errno)
		return 3
	case "int80", "int80-control":
		if scenario == "int80" && !install() {
			return 2
		}
		fmt.Printf("%d\n", int(foreignabi.Int80(20))) // i386 getpid
		if scenario == "int80" {
			return 3
		}
		return 0
	case "bench-install":
		start := time.Now()
		if !install() {
			return 2
		}
		fmt.Println(time.Since(start).Nanoseconds())
		return 0
	case "bench-getpid":
		before := timeGetpid()
		if !install() {
			return 2
		}
		fmt.Println(before, timeGetpid())
		return 0
	}
	fmt.Fprintln(os.Stderr, "child: unknown scenario", scenario)
	return 2
}

// timeGetpid returns the cost of one getpid system call in ns: the best
// of 30 batches, so that other load on the machine does not count.
func timeGetpid() float64 {
	const batches, n = 30, 20000
	best := time.Duration(1<<63 - 1)
	for range batches {
		start := time.Now()
		for range n {
			unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
		}
		best = min(best, time.Since(start))
	}
	return float64(best.Nanoseconds()) / n
}

// probe is one attempt at a refused operation, chosen so that it changes
// nothing on the host whether or not the filter refuses it.
type probe struct {
	name string
	// filteredOnly probes are not safe to run without the filter.
	filteredOnly bool
	do           func() error
}

var probes = []probe{
	// Each SysV IPC object made is removed at once (IPC_RMID).
	{"shmget-private", false, func() error { return sysvMake(unix.SYS_SHMGET, unix.SYS_SHMCTL, 4096) }},
	{"msgget-private", false, func() error { return sysvMake(unix.SYS_MSGGET, unix.SYS_MSGCTL, -1) }},
	{"semget-private", false, func() error { return sysvMake(unix.SYS_SEMGET, unix.SYS_SEMCTL, 1) }},
	// Unfiltered, TRACEME would make the parent test binary our tracer.
	{"ptrace-traceme", true, func() error { return ptrace(unix.PTRACE_TRACEME, 0) }},
	{"ptrace-attach-pid0", false, func() error { return ptrace(unix.PTRACE_ATTACH, 0) }},
	{"process_vm_readv-self", false, func() error {
		var src, dst [8]byte
		local := []unix.Iovec{{Base: &dst[0], Len: 8}}
		remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 8}}
		_, err := unix.ProcessVMReadv(os.Getpid(), local, remote, 0)
		return err
	}},
	{"pidfd_getfd-bad-fd", false, func() error { _, err := unix.PidfdGetfd(-1, 0, 0); return err }},
	{"unshare-newns", false, func() error { return unix.Unshare(unix.CLONE_NEWNS) }},
	{"unshare-newuser", false, func() error { return unix.Unshare(unix.CLONE_NEWUSER) }},
	{"setns-own-net", false, func() error {
		fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open: %w", err)
		}
		defer unix.Close(fd)
		return unix.Setns(fd, unix.CLONE_NEWNET)
	}},
	{"mount-unknown-fs", false, func() error { return unix.Mount("none", ".", "airlock-no-such-fs", 0, "") }},
	{"umount2-not-a-mount", false, func() error { return unix.Unmount(".", 0) }},
	{"chroot-slash", false, func() error { return unix.Chroot("/") }},
	{"socket-netlink", false, func() error { return socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE) }},
	{"socket-packet", false, func() error { return socket(unix.AF_PACKET, unix.SOCK_RAW, 0) }},
	{"socket-vsock", false, func() error { return socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0) }},
	{"socket-inet-raw", false, func() error { return socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP) }},
	{"socket-inet-stream", false, func() error { return socket(unix.AF_INET, unix.SOCK_STREAM, 0) }},
	{"socket-inet-mptcp", false, func() error {
		return socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
	}},
	{"socket-inet6-ping", false, func() error { return socket(unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_ICMPV6) }},
	{"socket-unix-dgram", false, func() error { return socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0) }},
	{"socket-inet-udp", false, func() error { return socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0) }},
	{"socket-inet6-udp", false, func() error { return socket(unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP) }},
	{"listen-loopback", false, listenLoopback},
	{"socketpair-unix", false, func() error {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return err
	}},
	{"keyctl-session-id", false, func() error {
		_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
		return err
	}},
	{"bpf-map-create-empty", false, func() error {
		var attr [64]byte
		_, _, e := unix.Syscall(unix.SYS_BPF, 0, uintptr(unsafe.Pointer(&attr[0])), uintptr(len(attr)))
		return errnoErr(e)
	}},
	{"perf_event_open-null", false, func() error {
		_, _, e := unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0)
		return errnoErr(e)
	}},
	{"userfaultfd", false, func() error {
		fd, _, e := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC, 0, 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		return errnoErr(e)
	}},
	{"io_uring_setup-null", false, func() error {
		_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)
		return errnoErr(e)
	}},
	{"clone3-null", false, func() error {
		_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
		return errnoErr(e)
	}},
	{"exec-clone-newuser", false, func() error {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		var pe *os.PathError
		if err := cmd.Run(); errors.As(err, &pe) {
			return pe.Err
		} else if err != nil {
			return err
		}
		return nil
	}},
	{"ioctl-tiocsti-devnull", false, func() error { return ioctlDevNull(unix.TIOCSTI) }},
	{"ioctl-tiocsti-high-bits", false, func() error { return ioctlDevNull(1<<32 | unix.TIOCSTI) }},
	{"ioctl-tioclinux-devnull", false, func() error { return ioctlDevNull(unix.TIOCLINUX) }},
	{"ioctl-tcgets-devnull", false, func() error { return ioctlDevNull(unix.TCGETS) }},
	{"personality-no-aslr", false, func() error {
		old, _, e := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
		if e != 0 {
			return fmt.Errorf("query: %w", e)
		}
		_, _, e = unix.Syscall(unix.SYS_PERSONALITY, old|addrNoRandomize, 0, 0)
		if e == 0 {
			unix.Syscall(unix.SYS_PERSONALITY, old, 0, 0)
		}
		return errnoErr(e)
	}},
	{"personality-query", false, func() error {
		_, _, e := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
		return errnoErr(e)
	}},
	{"syslog-size", false, func() error {
		_, _, e := unix.Syscall(unix.SYS_SYSLOG, unix.SYSLOG_ACTION_SIZE_BUFFER, 0, 0)
		return errnoErr(e)
	}},
	{"open_by_handle_at-null", false, func() error {
		dirfd := unix.AT_FDCWD
		_, _, e := unix.Syscall(unix.SYS_OPEN_BY_HANDLE_AT, uintptr(dirfd), 0, 0)
		return errnoErr(e)
	}},
}

// runProbes runs every probe on one locked thread (unshare and setns act
// on the calling thread) and returns each one's errno name, or "ok".
func runProbes(filtered bool) map[string]string {
	runtime.LockOSThread() // never unlocked: the thread may have left our namespaces
	out := map[string]string{}
	for _, p := range probes {
		if p.filteredOnly && !filtered {
			continue
		}
		out[p.name] = errName(p.do())
	}
	return out
}

// sysvMake makes a private SysV IPC object with the call get (its second
// argument n, a size or a count, when not -1) and removes it with ctl.
func sysvMake(get, ctl uintptr, n int) error {
	args := []uintptr{unix.IPC_PRIVATE, uintptr(n), unix.IPC_CREAT | 0o600}
	if n < 0 {
		args = []uintptr{unix.IPC_PRIVATE, unix.IPC_CREAT | 0o600, 0}
	}
	id, _, e := unix.Syscall(get, args[0], args[1], args[2])
	if e != 0 {
		return e
	}
	if ctl == unix.SYS_SEMCTL {
		_, _, e = unix.Syscall6(ctl, id, 0, unix.IPC_RMID, 0, 0, 0)
	} else {
		_, _, e = unix.Syscall(ctl, id, unix.IPC_RMID, 0)
	}
	return errnoErr(e)
}

func errName(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func ptrace(req, pid int) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), 0, 0, 0, 0)
	return errnoErr(e)
}

// listenLoopback binds a TCP socket to 127.0.0.1 and listens on it.
func listenLoopback() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return unix.Listen(fd, 1)
}

func socket(family, typ, proto int) error {
	fd, err := unix.Socket(family, typ, proto)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

func ioctlDevNull(req uint64) error {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer f.Close()
	c := byte('x')
	_, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), uintptr(req), uintptr(unsafe.Pointer(&c)))
	return errnoErr(e)
}

// workload is what an agent's tool does: read files, start programs,
// use threads, talk TCP over loopback and unix sockets.
func workload() error {
	if _, err := os.ReadFile("/proc/self/status"); err != nil {
		return fmt.Errorf("read a file: %w", err)
	}
	if err := os.WriteFile("scratch", []byte("x"), 0o600); err != nil {
		return fmt.Errorf("write a file: %w", err)
	}
	if err := exec.Command("/bin/true").Run(); err != nil {
		return fmt.Errorf("spawn /bin/true: %w", err)
	}
	out, err := exec.Command("/bin/sh", "-c", "echo $((6*7)) | cat").Output()
	if err != nil || string(out) != "42\n" {
		return fmt.Errorf("run a shell pipeline: %q, %v", out, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen on loopback: %w", err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		return fmt.Errorf("connect to a loopback listener: %w", err)
	}
	buf := make([]byte, 2)
	_, err = c.Read(buf)
	c.Close()
	if err != nil || string(buf) != "hi" {
		return fmt.Errorf("read from loopback: %q, %v", buf, err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("unix socketpair: %w", err)
	}
	unix.Close(fds[0])
	unix.Close(fds[1])
	done := make(chan int, 8)
	for i := range 8 {
		go func() { runtime.LockOSThread(); done <- i }() // forces new threads: clone
	}
	for range 8 {
		<-done
	}
	fmt.Println("pid", strconv.Itoa(os.Getpid()))
	return nil
}

// addrNoRandomize is ADDR_NO_RANDOMIZE from <linux/personality.h>.
const addrNoRandomize = 0x0040000
