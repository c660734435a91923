package payload

import (
	"golang.org/x/sys/unix"
)

// A probe is a system call made with arguments that the kernel refuses
// with a known errno (Kernel) before any permission check, and that no
// privilege can make succeed. A seccomp filter that refuses the call
// answers the probe with its own errno instead: so a probe that gets the
// filter's errno shows that the filter, not the kernel's permission
// checks, refused the attempt made with the same call. Every probe is
// harmless on any host, which is what lets the tests run them outside a
// sandbox to check Kernel.
type probe struct {
	Kernel string
	Call   func() error
}

// probeDir is a path that does not exist, for the probes that look one up.
const probeDir = "/nonexistent-airlock-probe"

// probes are the payloads' probes, by the attempt that uses them.
var probes = map[string]probe{
	// The target is looked up before mount's permission check.
	"mount": {"ENOENT", func() error { return unix.Mount("none", probeDir, "tmpfs", 0, "") }},
	// 0x1 lies in CSIGNAL, which unshare refuses as a flag.
	"unshare": {"EINVAL", func() error { return unix.Unshare(0x1) }},
	"setns":   {"EBADF", func() error { return unix.Setns(-1, 0) }},
	// chroot looks the path up before it checks CAP_SYS_CHROOT.
	"chroot": {"ENOENT", func() error { return unix.Chroot(probeDir) }},
	// An unknown command, with no attribute.
	"bpf": {"EINVAL", func() error {
		_, _, e := unix.Syscall(unix.SYS_BPF, 0xffff, 0, 0)
		return errnoErr(e)
	}},
	// A NULL handle is read before any capability check.
	"open-by-handle": {"EFAULT", func() error {
		_, _, e := unix.Syscall(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), 0, 0)
		return errnoErr(e)
	}},
	// Protocol 300 is past IPPROTO_MAX, checked before CAP_NET_RAW.
	"raw-inet":  {"EINVAL", func() error { return socketErr(unix.AF_INET, unix.SOCK_RAW, 300) }},
	"raw-inet6": {"EINVAL", func() error { return socketErr(unix.AF_INET6, unix.SOCK_RAW, 300) }},
}

func socketErr(family, typ, proto int) error {
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// withProbe runs the named probe and adds its errno, and the kernel's,
// to r.
func withProbe(r Report, name string) Report {
	p := probes[name]
	r.Detail["probe"] = errnoName(p.Call())
	r.Detail["probeKernel"] = p.Kernel
	return r
}

// kernelWould adds to r what the kernel itself would answer the call
// (Detail "kernelWould"), where the kernel would let it through and no
// probe is needed.
func kernelWould(r Report, answer string) Report {
	r.Detail["kernelWould"] = answer
	return r
}
