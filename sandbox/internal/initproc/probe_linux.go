package initproc

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// probeSelf and probeTarget say who runs the probes: the init (pid 1,
// which holds the control socket) or a target process, which must hold
// nothing but stdio.
const (
	probeSelf   = false
	probeTarget = true
)

// Probe runs the start-up probes in the calling process, which must be
// inside a sandbox: the checks of issue 6 item 1 (uid, capability sets,
// no_new_privs, seccomp mode, Landlock, only lo, no route, the host's
// canary file, /root and /home unreachable, the host's canary listener
// unreachable, and only stdio open). The init runs the same checks after
// its privilege drop when Config.Probes is set; tests run them from a
// target.
func Probe(req ProbeRequest) []ProbeResult {
	return runProbes(&req, probeTarget)
}

func runProbes(req *ProbeRequest, asTarget bool) []ProbeResult {
	if req == nil {
		req = &ProbeRequest{}
	}
	res := []ProbeResult{probeUID()}
	status := statusFields()
	res = append(res,
		probeCaps(status),
		probeField(status, "no_new_privs", "NoNewPrivs", "1"),
		probeSeccomp(status),
		probeLandlock(),
	)
	if req.Network == NetOwn {
		res = append(res, probeInterfaces(), probeRoutes())
	} else {
		res = append(res, probeSharedNet(req.Network)...)
	}
	res = append(res, probeAbsent("host_dirs", "/root", "/home"))
	if req.CanaryFile != "" {
		res = append(res, probeAbsent("canary_file", req.CanaryFile))
	}
	if req.CanaryAddr != "" && req.Network != NetUnenforced {
		// Not where the policy accepted egress the kernel does not hold:
		// the receipt says so instead.
		res = append(res, probeUnreachable(req.CanaryAddr))
	}
	if asTarget {
		res = append(res, probeStdioOnly())
	}
	return res
}

func probeUID() ProbeResult {
	r := ProbeResult{Name: "uid"}
	if os.Getuid() == SandboxID && os.Geteuid() == SandboxID && os.Getgid() == SandboxID && os.Getegid() == SandboxID {
		r.OK, r.Detail = true, "uid and gid are 65534"
	} else {
		r.Detail = "uid or gid is not 65534"
	}
	return r
}

// statusFields parses /proc/self/status into name → value.
func statusFields() map[string]string {
	lines, _ := ReadLines("/proc/thread-self/status")
	m := make(map[string]string, len(lines))
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

func probeCaps(status map[string]string) ProbeResult {
	r := ProbeResult{Name: "caps"}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if v, ok := status[k]; !ok || strings.Trim(v, "0") != "" {
			r.Detail = k + " is not empty"
			return r
		}
	}
	r.OK, r.Detail = true, "all five capability sets are empty"
	return r
}

func probeField(status map[string]string, name, field, want string) ProbeResult {
	r := ProbeResult{Name: name}
	if status[field] == want {
		r.OK, r.Detail = true, field+" is "+want
	} else {
		r.Detail = field + " is not " + want
	}
	return r
}

// probeSeccomp wants seccomp filter mode and airlock's own filter in it:
// two harmless calls that the kernel alone allows are refused with the
// errors that filter answers — unshare(0), a no-op for the kernel, with
// EPERM, and a netlink route socket, which any process may open, with
// EAFNOSUPPORT. Another filter (a container runtime's, say) shows mode 2
// too, but not both answers.
func probeSeccomp(status map[string]string) ProbeResult {
	r := ProbeResult{Name: "seccomp"}
	if status["Seccomp"] != "2" {
		r.Detail = "Seccomp is not 2"
		return r
	}
	if err := unix.Unshare(0); err != unix.EPERM {
		r.Detail = "Seccomp is 2 but unshare(0) is not refused with EPERM: not airlock's filter"
		return r
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err == nil {
		unix.Close(fd)
	}
	if err != unix.EAFNOSUPPORT {
		r.Detail = "Seccomp is 2 but a netlink socket is not refused with EAFNOSUPPORT: not airlock's filter"
		return r
	}
	r.OK, r.Detail = true, "Seccomp is 2; airlock's filter refuses unshare (EPERM) and netlink sockets (EAFNOSUPPORT)"
	return r
}

// landlockSubject is the file probeLandlock opens for writing: every
// thread may write its own comm whatever the file's owner and mode (the
// kernel's proc_tid_comm_permission), and /proc is mounted read-write,
// yet it lies outside the writable directories.
const landlockSubject = "/proc/thread-self/comm"

// probeLandlock wants Landlock enforced: access(2), which Landlock does not
// restrict, says the permissions and mount flags allow a write to
// landlockSubject, and opening it for writing is then refused with EACCES
// — which only a Landlock domain that grants no write outside its
// directories does. Nothing is written.
func probeLandlock() ProbeResult {
	r := ProbeResult{Name: "landlock"}
	if err := unix.Access(landlockSubject, unix.W_OK); err != nil {
		r.Detail = "the permissions refuse the probe's write: Landlock cannot be told apart"
		return r
	}
	fd, err := unix.Open(landlockSubject, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	switch {
	case err == nil:
		unix.Close(fd)
		r.Detail = "a write outside the writable directories is allowed"
	case err == unix.EACCES:
		r.OK, r.Detail = true, "a write outside the writable directories is refused, though the permissions allow it"
	default:
		r.Detail = "a write outside the writable directories failed for another reason"
	}
	return r
}

// probeInterfaces reads /proc/net/dev (no netlink: the seccomp filter
// refuses netlink sockets) and wants lo alone.
func probeInterfaces() ProbeResult {
	r := ProbeResult{Name: "interfaces"}
	lines, err := ReadLines("/proc/net/dev")
	if err != nil || len(lines) < 2 {
		r.Detail = "cannot read /proc/net/dev"
		return r
	}
	for _, l := range lines[2:] {
		name, _, _ := strings.Cut(l, ":")
		if strings.TrimSpace(name) != "lo" {
			r.Detail = "an interface other than lo exists"
			return r
		}
	}
	r.OK, r.Detail = true, "lo is the only interface"
	return r
}

// probeRoutes wants no route through anything but lo.
func probeRoutes() ProbeResult {
	r := ProbeResult{Name: "routes"}
	for _, f := range []struct {
		path string
		dev  int
		skip int
	}{{"/proc/net/route", 0, 1}, {"/proc/net/ipv6_route", 9, 0}} {
		lines, err := ReadLines(f.path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // no IPv6 in this kernel
			}
			r.Detail = "cannot read " + f.path
			return r
		}
		for _, l := range lines[min(f.skip, len(lines)):] {
			fs := strings.Fields(l)
			if len(fs) > f.dev && fs[f.dev] != "lo" {
				r.Detail = "a route through an interface other than lo exists"
				return r
			}
		}
	}
	r.OK, r.Detail = true, "no route except through lo"
	return r
}

// probeAbsent wants every path unreachable (missing or refused).
func probeAbsent(name string, paths ...string) ProbeResult {
	r := ProbeResult{Name: name}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil || !(errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission)) {
			r.Detail = p + " is reachable"
			return r
		}
	}
	r.OK, r.Detail = true, strings.Join(paths, ", ")+" unreachable"
	return r
}

// probeUnreachable wants a TCP connection to the host's canary listener
// to fail.
func probeUnreachable(addr string) ProbeResult {
	r := ProbeResult{Name: "canary_listener"}
	sa, ok := parseAddr4(addr)
	if !ok {
		r.Detail = "the canary address " + addr + " is not an IPv4 address and port: not probed"
		return r
	}
	if reached(sa, 500*time.Millisecond) {
		r.Detail = "the host's canary listener " + addr + " was reached"
		return r
	}
	r.OK, r.Detail = true, "the host's canary listener "+addr+" is unreachable"
	return r
}

// probeStdioOnly wants nothing open but 0, 1 and 2.
func probeStdioOnly() ProbeResult {
	r := ProbeResult{Name: "fds"}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		r.Detail = "cannot list /proc/self/fd"
		return r
	}
	names, err := d.Readdirnames(-1)
	self := d.Fd()
	d.Close()
	if err != nil {
		r.Detail = "cannot list /proc/self/fd"
		return r
	}
	for _, n := range names {
		if n != "0" && n != "1" && n != "2" && n != itoa(int(self)) && !isRuntimeFD(Atoi(n)) {
			r.Detail = "descriptor " + n + " is open"
			return r
		}
	}
	r.OK, r.Detail = true, "only stdio is open"
	return r
}

// reached reports whether a TCP connection to sa was made within timeout. Hand-written over the socket calls rather than
// net.Dial: importing net would move this package's initialiser, and so
// the init's start, to the end of the binary's (see doc.go).
func reached(sa *unix.SockaddrInet4, timeout time.Duration) bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	switch err := unix.Connect(fd, sa); {
	case err == nil:
		return true
	case !errors.Is(err, unix.EINPROGRESS):
		return false
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(pfd, int(timeout.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return false
		}
		soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		return err == nil && soErr == 0
	}
}

// parseAddr4 parses "a.b.c.d:port" (decimal parts, no leading zeros).
func parseAddr4(addr string) (*unix.SockaddrInet4, bool) {
	host, port, ok := strings.Cut(addr, ":")
	if !ok {
		return nil, false
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 || strconv.Itoa(p) != port {
		return nil, false
	}
	sa := &unix.SockaddrInet4{Port: p}
	parts := strings.Split(host, ".")
	if len(parts) != 4 {
		return nil, false
	}
	for i, part := range parts {
		b, err := strconv.Atoi(part)
		if err != nil || b < 0 || b > 255 || strconv.Itoa(b) != part {
			return nil, false
		}
		sa.Addr[i] = byte(b)
	}
	return sa, true
}
