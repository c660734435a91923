package initproc

import (
	"errors"
	"fmt"
	"github.com/airlock-sandbox/airlock/seccomp"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// sandboxID is the uid and gid of everything inside the sandbox.
const SandboxID = 65534

// dropPrivileges leaves the init — and so the target it forks — with
// nothing: a fresh session keyring, the rlimits, uid and gid 65534, every
// capability set empty on every thread, no_new_privs, Landlock and
// seccomp. The order matters: capabilities go before no_new_privs and the
// filters, and seccomp comes last since it refuses what came before.
func (s *initState) dropPrivileges(port int) error {
	if os.Getuid() != s.id() || os.Getgid() != s.id() {
		return fmt.Errorf("init runs as uid %d gid %d, want %d", os.Getuid(), os.Getgid(), s.id())
	}
	// A new anonymous session keyring: nothing of the host user's keys
	// is reachable, whatever the seccomp filter allows.
	if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 && e != unix.ENOSYS {
		return fmt.Errorf("join a new session keyring: %w", e)
	}
	s.receipt["user"] = fmt.Sprintf("user namespace; uid and gid %d inside", s.id())
	// no_new_privs and Landlock go on this thread only, the one that
	// forks the target (go-landlock's single-thread enforcement; the
	// thread stays locked until the init exits). The seccomp filter is
	// synchronised to every thread by the kernel (TSYNC).
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"caps", s.dropCaps},
		{"no_new_privs", s.noNewPrivs},
		{"landlock", func() error { return s.landlock(port) }},
		{"seccomp", s.seccomp},
	} {
		if err := s.control(c.name, c.run); err != nil {
			return err
		}
	}
	return nil
}

// id is the uid and gid the init runs as: SandboxID but for a test hole.
func (s *initState) id() int { return s.hole.ID() }

// noNewPrivs sets no_new_privs.
func (s *initState) noNewPrivs() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	s.receipt["no_new_privs"] = "set"
	return nil
}

// seccomp installs airlock's seccomp filter, and the second and third
// where the sandbox needs them.
func (s *initState) seccomp() error {
	stacked := seccompFiltered()
	desc, err := installSeccomp()
	if err != nil {
		if s.cfg.NeedSeccomp || s.cfg.NoMemoryCgroup || s.cfg.Network == NetShared || !errors.Is(err, errNoSeccomp) {
			return fmt.Errorf("seccomp: %w", err)
		}
		s.receipt["seccomp"] = "none: " + err.Error()
		return nil
	}
	second, err := s.installNoNetNS()
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	if s.cfg.NoMemoryCgroup {
		if err := seccomp.InstallNoMemoryCgroup(); err != nil {
			return fmt.Errorf("seccomp: third filter (no memory cgroup): %w", err)
		}
		second += "; third filter (no memory cgroup): SysV IPC and UDP sockets refused"
	}
	if stacked {
		desc += "; stacked on a filter airlock runs under (a container's)"
	}
	s.receipt["seccomp"] = desc + second
	return nil
}

// dropGroups waits for the parent's word that the user namespace's maps
// are written (one byte on the setup pipe), then empties the supplementary
// groups of every thread (setgroups(2) is per thread; psx runs it on
// each), which newgidmap's maps allow.
func dropGroups() error {
	var b [1]byte
	if _, err := unix.Read(fdSetup, b[:]); err != nil {
		return fmt.Errorf("wait for the user namespace's maps: %w", err)
	}
	if b[0] != MapsWritten {
		return fmt.Errorf("wait for the user namespace's maps: got %#x", b[0])
	}
	if err := psxErr(psx.Syscall3(unix.SYS_SETGROUPS, 0, 0, 0)); err != nil {
		return fmt.Errorf("drop the supplementary groups: %w", err)
	}
	return nil
}

// MapsWritten is the byte by which the parent says the maps are written.
const MapsWritten = 'M'

// dropCaps empties the ambient, bounding, inheritable, permitted and
// effective sets. Capabilities are per thread: the bounding and ambient
// sets are emptied on this (locked) thread, the one that forks the
// target, with plain prctl calls; permitted, effective and inheritable
// are emptied on every thread of the init at once with one psx call
// (each psx call signals every thread and waits for each to run: one per
// capability would cost tens of milliseconds on a busy host). The
// runtime's other threads keep a bounding set but hold no capability and
// never fork.
func (s *initState) dropCaps() error {
	last, err := capLast()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := psxErr(psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	s.receipt["capabilities"] = "all five sets empty (bounding, permitted, effective, inheritable, ambient)"
	return nil
}

// applyRlimits sets the run's rlimits on the init just before it forks
// the target, which inherits them: no window in which the target runs
// without them. The init does little after that (wait, forward, report).
func (s *initState) applyRlimits() error {
	for _, r := range s.cfg.Rlimits {
		// syscall.Setrlimit, not unix: the Go runtime then passes
		// RLIMIT_NOFILE on to the target instead of restoring its own.
		if err := syscall.Setrlimit(r.Resource, &syscall.Rlimit{Cur: r.Cur, Max: r.Max}); err != nil {
			return fmt.Errorf("setrlimit %s: %w", r.Name, err)
		}
	}
	return nil
}

// capLast is the highest capability number this kernel knows.
func capLast() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("read cap_last_cap: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return 0, fmt.Errorf("bad cap_last_cap %q", b)
	}
	return n, nil
}

func psxErr(_, _ uintptr, e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// landlock restricts the init and its descendants: read and execute on
// the whole (already minimal) view, write only to the sandbox's own
// directories, the ReadWrite binds and the harmless /dev nodes, TCP
// connect only to the proxy's port, no signals or abstract sockets out of
// the domain.
func (s *initState) landlock(port int) error {
	abi := LandlockABI()
	if err := s.checkSharedLandlock(abi); err != nil {
		return err
	}
	if abi < 1 {
		if s.cfg.NeedLandlock {
			return errors.New("landlock: the kernel has no Landlock")
		}
		s.receipt["landlock"] = "none: the kernel has no Landlock"
		return nil
	}
	cfg := landlock.Config{
		HandledAccessFS:  landlock.V7.HandledAccessFS,
		HandledAccessNet: s.landlockNet(),
		Scoped:           landlock.V7.Scoped,
	}.BestEffort()
	rw := append([]string{TmpDir, WorkspaceDir, FindingsDir, "/dev/shm"}, s.cfg.ReadWrite...)
	devs := make([]string, len(devNodes))
	for i, n := range devNodes {
		devs[i] = "/dev/" + n
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs(rw...).WithRefer(),
		landlock.RWFiles(devs...),
	}
	if port > 0 {
		rules = append(rules, landlock.ConnectTCP(uint16(port)))
	}
	net := s.landlockNetReceipt(port)
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if fd >= 0 {
		err = llsys.LandlockRestrictSelf(fd, flags)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("landlock: restrict: %w", err)
		}
	}
	desc := fmt.Sprintf("ABI %d: read-only view, writable /tmp /workspace /findings", abi)
	if abi >= 4 {
		desc += "; " + net
	}
	if abi >= 6 {
		desc += "; signals and abstract unix sockets scoped"
	}
	s.receipt["landlock"] = desc
	return nil
}
