package initproc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/seccomp"
)

// What the init does where a container (or any host that locks parts of
// its /proc, or refuses network namespaces) leaves it less than a bare
// host: docs/sandbox.md, "Inside a container".

// The values of Config.Network.
const (
	// NetOwn (the zero value): a network namespace of the sandbox's own,
	// with only lo.
	NetOwn = ""
	// NetShared: the host refused a network namespace; the sandbox shares
	// the host's, and Landlock (TCP connect to the proxy's port only, no
	// bind) and the second seccomp filter (no UDP, no listen) keep the
	// proxy its only way out.
	NetShared = "shared"
	// NetUnenforced: as NetShared, but without Landlock's TCP rules: the
	// policy accepted egress the kernel does not hold (weakerModes).
	NetUnenforced = "unenforced"
)

// procRefused reports whether err, from mounting a fresh proc, is the
// kernel's refusal in a mount namespace whose /proc has locked mounts
// over parts of it: a container runtime masks /proc/kcore, /proc/keys,
// /proc/sys and others, and the kernel then mounts no new proc that would
// show them (mount_too_revealing).
func procRefused(err error) bool { return errors.Is(err, unix.EPERM) }

// useHostProc decides, after the init's fresh /proc was refused, whether
// it may keep the host's: only with Landlock, which closes the ptrace
// checks of /proc/PID files (environ, mem, fd, cwd) of every process
// outside the sandbox's domain to it, and only where psx does not look
// for this process's threads in /proc/1 (a build without cgo).
func useHostProc() error {
	if PsxReadsProc {
		return errors.New("this airlock is built with cgo, whose psx looks for the init's threads in /proc/1, and the host refuses a fresh /proc (as a container does): use a static build (CGO_ENABLED=0)")
	}
	if LandlockABI() < 1 {
		return errors.New("the host refuses a fresh /proc (as a container does), and without Landlock the host's would let the sandbox read and write the memory of other processes of its uid")
	}
	return nil
}

// checkProc fails the sandbox when it has the host's /proc but the
// policy requires one of its own (require "procfs").
func (s *initState) checkProc() error {
	if s.hostProc && s.cfg.NeedOwnProc {
		return errors.New(`the host refuses a fresh /proc (a container's runtime masks parts of its own), and the policy requires one ("procfs")`)
	}
	return nil
}

// mountProc gives the sandbox its /proc under root: a fresh one of its
// pid namespace, or, where the host refuses that, the host's bound with
// its masks.
func (s *initState) mountProc(root string) error {
	if !s.hostProc {
		if err := unix.Mount("proc", root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount /proc: %w", err)
		}
		s.receipt["proc"] = "its own, of the sandbox's pid namespace"
		return nil
	}
	if err := unix.Mount("/proc", root+"/proc", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind the host's /proc: %w", err)
	}
	s.receipt["proc"] = "the host's, bound with its masks: the host refuses a fresh one (a container's runtime masks parts of its /proc). " +
		"It lists the host's processes, with the host's pids; their environment, memory, descriptors and directories are closed to the sandbox " +
		"by uid and Landlock, and signals and ptrace reach only the sandbox's own pid namespace"
	return nil
}

// nestedUserNSRefused reports whether the write of max_user_namespaces=0
// failed only because the host's /proc/sys is read-only (a container's),
// which leaves nested user namespaces to the seccomp filter alone.
func (s *initState) nestedUserNSRefused(err error) bool {
	if s.hostProc && errors.Is(err, unix.EROFS) {
		s.receipt["nested_namespaces"] = "refused by the seccomp filter only (clone with CLONE_NEWUSER, unshare, clone3): the host's /proc/sys is read-only"
		return true
	}
	return false
}

// userCountsRefused reports whether bounding the user namespace's counts
// failed only because the host's /proc/sys is read-only (inside a
// container, whose own user namespace's limits then apply), and says so
// in the receipt.
func (s *initState) userCountsRefused(err error) bool {
	if s.hostProc && errors.Is(err, unix.EROFS) {
		s.receipt["user_counts"] = "not bounded by airlock: the host's /proc/sys is read-only (the container's own limits apply)"
		return true
	}
	return false
}

// hostnameRefused reports whether sethostname failed with EPERM although
// the init holds CAP_SYS_ADMIN over its UTS namespace: a filter it runs
// under refuses the call (a container's seccomp profile refuses it to a
// container without CAP_SYS_ADMIN). The namespace stays the sandbox's own
// with the host's name in it; /etc/hostname inside is airlock's.
func (s *initState) hostnameRefused(err error) bool {
	if errors.Is(err, unix.EPERM) && seccompFiltered() {
		s.receipt["hostname"] = "the host's, in a UTS namespace of the sandbox's own: sethostname is refused by a seccomp filter airlock runs under (a container's)"
		return true
	}
	return false
}

// seccompFiltered reports whether the init already runs under a seccomp
// filter, one it did not install.
func seccompFiltered() bool {
	lines, _ := ReadLines("/proc/self/status")
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
			return strings.TrimSpace(v) == "2"
		}
	}
	return false
}

// sharedNetwork is network() for a sandbox in the host's network
// namespace: lo is the host's, already up and not the init's to change.
func (s *initState) sharedNetwork() {
	s.receipt["network"] = "the host's network namespace: the host refuses a new one (as a container may)"
}

// networkReceipt is the receipt of the sandbox's network with its proxy
// listener on port.
func (s *initState) networkReceipt(port int) string {
	switch s.cfg.Network {
	case NetShared:
		return fmt.Sprintf("the host's network namespace (the host refuses a new one); egress proxy listener 127.0.0.1:%d passed to the parent, "+
			"the only way out while Landlock allows TCP connect to its port alone and the second seccomp filter refuses UDP and listen", port)
	case NetUnenforced:
		return fmt.Sprintf("the host's network namespace (the host refuses a new one); egress proxy listener 127.0.0.1:%d passed to the parent; "+
			"NOT kernel-enforced (weakerModes egress-unenforced): programs that ignore the proxy variables reach the network directly", port)
	}
	return fmt.Sprintf("empty network namespace, lo only; egress proxy listener 127.0.0.1:%d passed to the parent", port)
}

// landlockNet is the network part of the Landlock ruleset: TCP connect,
// and in the host's network namespace TCP bind too (no rule allows any).
func (s *initState) landlockNet() landlock.AccessNetSet {
	if s.cfg.Network != NetOwn {
		return llsys.AccessNetConnectTCP | llsys.AccessNetBindTCP
	}
	return llsys.AccessNetConnectTCP
}

// landlockNetReceipt describes the TCP rules.
func (s *initState) landlockNetReceipt(port int) string {
	net := "no TCP connect"
	if port > 0 {
		net = "TCP connect only to the proxy port " + strconv.Itoa(port)
	}
	if s.cfg.Network != NetOwn {
		net += " (on any address: Landlock's rules name ports only); no TCP bind"
	}
	return net
}

// checkSharedLandlock fails a NetShared sandbox whose kernel lacks
// Landlock's TCP rules: without them the proxy would not be the only way
// out.
func (s *initState) checkSharedLandlock(abi int) error {
	if s.cfg.Network == NetShared && abi < 4 {
		return fmt.Errorf("landlock: ABI %d lacks TCP rules (needs 4), which a sandbox in the host's network namespace needs", abi)
	}
	return nil
}

// installNoNetNS installs the second seccomp filter in the host's network
// namespace and returns the receipt's words for it ("" without it).
func (s *initState) installNoNetNS() (string, error) {
	if s.cfg.Network == NetOwn {
		return "", nil
	}
	if err := seccomp.InstallNoNetNS(); err != nil {
		if s.cfg.Network == NetUnenforced {
			return "; no second filter: " + err.Error(), nil
		}
		return "", fmt.Errorf("second filter: %w", err)
	}
	return "; second filter (no network namespace of its own): UDP sockets and listen refused", nil
}

// probes runs the start-up probes of req for this sandbox's network.
func (s *initState) probes(req *ProbeRequest) []ProbeResult {
	r := ProbeRequest{}
	if req != nil {
		r = *req
	}
	r.Network = s.cfg.Network
	return runProbes(&r, probeSelf)
}

// probeSharedNet replaces the checks of an empty network namespace (only
// lo, no route) where the sandbox shares the host's: a UDP socket and a
// listening socket must be refused (the second filter), and a TCP bind
// (Landlock), each with EACCES.
func probeSharedNet(network string) []ProbeResult {
	if network == NetUnenforced {
		return nil // nothing is claimed of the network: nothing to check
	}
	udp := ProbeResult{Name: "udp"}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	if err == unix.EACCES {
		udp.OK, udp.Detail = true, "a UDP socket is refused"
	} else {
		udp.Detail = "a UDP socket is not refused with EACCES"
	}
	bind, listen := ProbeResult{Name: "tcp_bind"}, ProbeResult{Name: "listen"}
	fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		bind.Detail, listen.Detail = "a TCP socket cannot be opened", "a TCP socket cannot be opened"
		return []ProbeResult{udp, bind, listen}
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err == unix.EACCES {
		bind.OK, bind.Detail = true, "a TCP bind is refused"
	} else {
		bind.Detail = "a TCP bind is not refused with EACCES"
	}
	if err := unix.Listen(fd, 1); err == unix.EACCES {
		listen.OK, listen.Detail = true, "listen is refused"
	} else {
		listen.Detail = "listen is not refused with EACCES"
	}
	return []ProbeResult{udp, bind, listen}
}
