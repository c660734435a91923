package payload

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/mountinfo"
)

// The privilege payloads try to gain what the sandbox took away: another
// process's memory, the mount table, new namespaces, the host's keyrings,
// eBPF, perf and io_uring, a root uid, capabilities, a setuid binary's
// privileges, and a terminal to type into.
//
// Where the kernel itself could refuse with the seccomp filter's errno,
// the payload adds a probe: the same call with arguments the kernel
// refuses with a different errno before any permission check (Detail
// "probe", with the kernel's errno in "probeKernel"). The filter answers
// the probe with its own errno; the kernel cannot. Where the kernel would
// let the call through ("kernelWould"), no probe is needed.
func init() {
	Register("hello", hello)
	Register("hold", hold)
	Register("ptrace-child", ptraceChild)
	Register("vm-readv-child", vmReadvChild)
	Register("mount", mountTmpfs)
	Register("unshare", unshareNS)
	Register("clone-newuser", cloneNewuser)
	Register("setns", setnsNet)
	Register("chroot", chroot)
	Register("keyctl", keyctl)
	Register("add-key", addKey)
	Register("bpf", bpf)
	Register("perf", perf)
	Register("io-uring", ioUring)
	Register("userfaultfd", userfaultfd)
	Register("clone3", clone3)
	Register("personality", personality)
	Register("tiocsti", tiocsti)
	Register("setuid-root", setuidRoot)
	Register("capset", capset)
	Register("open-by-handle", openByHandle)
	Register("exec-setuid", execSetuid)
}

// hello: who and what the payload is inside the sandbox.
func hello([]string) int {
	r := Report{Attempt: "hello", Detail: map[string]string{
		"uid": strconv.Itoa(os.Getuid()), "euid": strconv.Itoa(os.Geteuid()), "pid": strconv.Itoa(os.Getpid()),
		"noNewPrivs": statusField("self", "NoNewPrivs"), "seccomp": statusField("self", "Seccomp"),
		"capEff": statusField("self", "CapEff"), "capBnd": statusField("self", "CapBnd"),
	}}
	r.Evidence = fmt.Sprintf("running as uid %d, pid %d", os.Getuid(), os.Getpid())
	return report(r)
}

// hold TOKEN [setsid] [ignore-term]: wait for an hour, with TOKEN in the
// command line so the host can look for this process after teardown.
func hold(args []string) int {
	for _, a := range args[min(len(args), 1):] {
		switch a {
		case "setsid":
			_, _ = unix.Setsid()
		case "ignore-term":
			signalIgnoreTerm()
		}
	}
	time.Sleep(time.Hour)
	return 0
}

// target starts a child to attack and waits until it runs.
func target() (*exec.Cmd, error) {
	cmd := self("hold", "target")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	time.Sleep(100 * time.Millisecond)
	return cmd, nil
}

func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// ptrace-child: attach to a child of our own, same uid: the kernel would
// allow it, so any refusal is the filter's.
func ptraceChild([]string) int {
	cmd, err := target()
	if err != nil {
		return broken("ptrace-child", err)
	}
	defer stop(cmd)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = unix.PtraceAttach(cmd.Process.Pid)
	if err == nil {
		_ = unix.PtraceDetach(cmd.Process.Pid)
	}
	return report(kernelWould(outcome("ptrace-child", err, "attached to a child process with ptrace"), "allow (own child, same uid)"))
}

// vm-readv-child: read a child's memory with process_vm_readv at an
// unmapped address: the kernel would answer EFAULT.
func vmReadvChild([]string) int {
	cmd, err := target()
	if err != nil {
		return broken("vm-readv-child", err)
	}
	defer stop(cmd)
	buf := make([]byte, 8)
	local := []unix.Iovec{{Base: &buf[0], Len: 8}}
	remote := []unix.RemoteIovec{{Base: 0x1000, Len: 8}}
	_, err = unix.ProcessVMReadv(cmd.Process.Pid, local, remote, 0)
	return report(kernelWould(outcome("vm-readv-child", err, "read a child's memory"), "EFAULT (unmapped address)"))
}

// mount: mount a tmpfs over /tmp.
func mountTmpfs([]string) int {
	runtime.LockOSThread()
	r := outcome("mount", unix.Mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m"), "mounted a tmpfs on /tmp")
	return report(withProbe(r, "mount"))
}

// unshare: a new mount namespace.
func unshareNS([]string) int {
	runtime.LockOSThread() // a thread that unshared never goes back to the pool
	r := outcome("unshare", unix.Unshare(unix.CLONE_NEWNS), "unshared a new mount namespace")
	return report(withProbe(r, "unshare"))
}

// clone-newuser: a child in a new user namespace, the way to regain every
// capability inside it.
func cloneNewuser([]string) int {
	cmd := self("hello")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
	cmd.Stdout = io.Discard
	err := cmd.Run()
	return report(kernelWould(outcome("clone-newuser", err, "started a child in a new user namespace"), "ENOSPC (user.max_user_namespaces=0 inside) or allow"))
}

// setns: join a network namespace (our own: the call is what is tested).
func setnsNet([]string) int {
	runtime.LockOSThread()
	fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return broken("setns", err)
	}
	defer unix.Close(fd)
	r := outcome("setns", unix.Setns(fd, unix.CLONE_NEWNET), "joined a network namespace with setns")
	return report(withProbe(r, "setns"))
}

// chroot: change the root directory.
func chroot([]string) int {
	runtime.LockOSThread()
	r := outcome("chroot", unix.Chroot("/tmp"), "changed root to /tmp")
	return report(withProbe(r, "chroot"))
}

// keyctl: join a named session keyring (the kernel would allow it).
func keyctl([]string) int {
	_, err := unix.KeyctlJoinSessionKeyring("airlock-payload")
	return report(kernelWould(outcome("keyctl", err, "joined a session keyring"), "allow"))
}

// add-key: add a key to the process keyring (the kernel would allow it).
func addKey([]string) int {
	_, err := unix.AddKey("user", "airlock-payload", []byte("secret"), unix.KEY_SPEC_PROCESS_KEYRING)
	return report(kernelWould(outcome("add-key", err, "added a key to a keyring"), "allow"))
}

// bpf: create an eBPF array map.
func bpf([]string) int {
	attr := struct{ mapType, keySize, valueSize, maxEntries uint32 }{unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1}
	fd, _, e := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if e == 0 {
		unix.Close(int(fd))
	}
	return report(withProbe(outcome("bpf", errnoErr(e), "created an eBPF map"), "bpf"))
}

// perf: count our own user-space CPU clock, which perf_event_paranoid up
// to 2 allows (3 answers EACCES).
func perf([]string) int {
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Bits: unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	return report(kernelWould(outcome("perf", err, "opened a perf event"), "allow, or EACCES under perf_event_paranoid 3"))
}

// io-uring: set up a ring.
func ioUring([]string) int {
	var params [120]byte // struct io_uring_params
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
	if e == 0 {
		unix.Close(int(fd))
	}
	return report(kernelWould(outcome("io-uring", errnoErr(e), "set up an io_uring"), "allow, or EPERM when kernel.io_uring_disabled is set"))
}

// userfaultfd: user-mode-only fault handling, which the kernel allows
// without privilege.
func userfaultfd([]string) int {
	const uffdUserModeOnly = 1
	fd, _, e := unix.Syscall(unix.SYS_USERFAULTFD, uffdUserModeOnly|unix.O_CLOEXEC, 0, 0)
	if e == 0 {
		unix.Close(int(fd))
	}
	return report(kernelWould(outcome("userfaultfd", errnoErr(e), "opened a userfaultfd"), "allow (UFFD_USER_MODE_ONLY)"))
}

// clone3: whose flags sit behind a pointer no seccomp filter can read.
// With no arguments the kernel answers EINVAL.
func clone3([]string) int {
	_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
	return report(kernelWould(outcome("clone3", errnoErr(e), "clone3 ran"), "EINVAL (no clone_args)"))
}

// personality: turn address-space randomisation off.
func personality([]string) int {
	const addrNoRandomize = 0x0040000
	_, _, e := unix.Syscall(unix.SYS_PERSONALITY, addrNoRandomize, 0, 0)
	return report(kernelWould(outcome("personality", errnoErr(e), "set ADDR_NO_RANDOMIZE"), "allow"))
}

// tiocsti: push a character into the input queue of our standard input
// (bubblewrap CVE-2017-5226). Stdin is a pipe: the kernel would answer
// ENOTTY.
func tiocsti([]string) int {
	c := byte('x')
	_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	return report(kernelWould(outcome("tiocsti", errnoErr(e), "pushed input into a terminal"), "ENOTTY (stdin is a pipe)"))
}

// setuid-root: become uid 0.
func setuidRoot([]string) int {
	runtime.LockOSThread()
	_, _, e := unix.RawSyscall(unix.SYS_SETUID, 0, 0, 0)
	r := outcome("setuid-root", errnoErr(e), "became uid 0")
	r.Detail["uidMap"] = strings.TrimSpace(readSmall("/proc/self/uid_map"))
	return report(r)
}

// capset: put every capability in the permitted and effective sets.
func capset([]string) int {
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: ^uint32(0), Permitted: ^uint32(0)}, {Effective: ^uint32(0), Permitted: ^uint32(0)}}
	r := outcome("capset", unix.Capset(&hdr, &data[0]), "raised every capability")
	for _, f := range []string{"CapPrm", "CapEff", "CapBnd", "CapAmb", "CapInh", "NoNewPrivs"} {
		r.Detail[f] = statusField("self", f)
	}
	return report(r)
}

// open-by-handle: open /etc/passwd by file handle, around the mount view
// (the "shocker" escape).
func openByHandle([]string) int {
	h, mnt, err := unix.NameToHandleAt(unix.AT_FDCWD, "/etc/passwd", 0)
	if err != nil {
		return broken("open-by-handle", fmt.Errorf("name_to_handle_at: %w", err))
	}
	_ = mnt
	root, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return broken("open-by-handle", err)
	}
	defer unix.Close(root)
	fd, err := unix.OpenByHandleAt(root, h, unix.O_RDONLY)
	if err == nil {
		unix.Close(fd)
	}
	return report(withProbe(outcome("open-by-handle", err, "opened a file by handle"), "open-by-handle"))
}

// exec-setuid PATH [ARG...]: run a setuid binary with a pipe as stdin
// that stays open (su waits there for a password) and sample its
// effective uid from /proc while it runs. Its output is kept too (id
// prints euid=0 when the bit was honoured).
func execSetuid(args []string) int {
	if len(args) < 1 {
		return usage("exec-setuid", "PATH [ARG...]")
	}
	r := Report{Attempt: "exec-setuid", Detail: map[string]string{}}
	var st unix.Stat_t
	if err := unix.Stat(args[0], &st); err != nil {
		return report(outcome("exec-setuid", err, ""))
	}
	r.Detail["mode"] = fmt.Sprintf("%#o", st.Mode&0o7777)
	r.Detail["owner"] = strconv.Itoa(int(st.Uid))
	r.Detail["setuidBit"] = strconv.FormatBool(st.Mode&unix.S_ISUID != 0)
	r.Detail["noNewPrivs"] = statusField("self", "NoNewPrivs")
	r.Detail["mountOptions"] = mountOptions(args[0])
	var out bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return broken("exec-setuid", err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		return report(outcome("exec-setuid", err, ""))
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	euids := map[string]bool{}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(1500 * time.Millisecond)
	// The effective uid is settled by execve: once the process carries
	// the binary's name, it is sampled for a while and then ended if it is
	// still waiting (su waits for a password). A program that finishes by
	// itself (id) is left to finish and print.
	name := filepath.Base(args[0])[:min(len(filepath.Base(args[0])), 15)]
	var named time.Time
sample:
	for {
		if f := strings.Fields(statusField(pid, "Uid")); len(f) >= 2 {
			euids[f[1]] = true
		}
		if statusField(pid, "Name") == name {
			if named.IsZero() {
				named = time.Now()
			} else if time.Since(named) > 200*time.Millisecond {
				_ = cmd.Process.Kill()
			}
		}
		select {
		case <-done:
			break sample
		case <-deadline:
			_ = cmd.Process.Kill()
			<-done
			break sample
		case <-time.After(2 * time.Millisecond):
		}
	}
	var seen []string
	for u := range euids {
		seen = append(seen, u)
	}
	r.Detail["euids"] = strings.Join(seen, ",")
	r.Detail["output"] = strings.TrimSpace(out.String()[:min(out.Len(), 256)])
	r.Succeeded = euids["0"] || strings.Contains(out.String(), "euid=0")
	r.Evidence = fmt.Sprintf("%s (mode %s, owner uid %s inside, on a mount with %s) ran with effective uid %s; no_new_privs %s",
		args[0], r.Detail["mode"], r.Detail["owner"], r.Detail["mountOptions"], orNone(r.Detail["euids"]), r.Detail["noNewPrivs"])
	return report(r)
}

// mountOptions returns the options of the mount that holds path, from
// /proc/self/mountinfo (the deepest mount point that is a prefix of it).
func mountOptions(path string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	mounts, err := mountinfo.Parse(b)
	if err != nil {
		return ""
	}
	best, opts := "", ""
	for _, m := range mounts {
		if (path == m.Point || strings.HasPrefix(path, strings.TrimSuffix(m.Point, "/")+"/")) && len(m.Point) >= len(best) {
			best, opts = m.Point, m.Options
		}
	}
	return opts
}

func orNone(s string) string {
	if s == "" {
		return "(not sampled)"
	}
	return s
}

// readSmall reads at most 512 bytes of a small file, "" on error.
func readSmall(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b[:min(len(b), 512)])
}
