package initproc

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// hole names one step of the setup that the init skips.
type Hole string

// The holes, each named for what it leaves open.
const (
	// holeUID keeps the init at uid and gid 0 of its user namespace
	// (mapped to the same host ids as 65534 would be): probe "uid".
	HoleUID Hole = "uid"
	// holeCaps keeps the init's capabilities: probe "caps".
	HoleCaps Hole = "caps"
	// holeNoNewPrivs leaves no_new_privs unset. Landlock and the seccomp
	// filter need no_new_privs or CAP_SYS_ADMIN, so they are applied
	// under CAP_SYS_ADMIN before the capabilities are dropped: only
	// no_new_privs differs. Probe "no_new_privs".
	HoleNoNewPrivs Hole = "no_new_privs"
	// holeSeccomp installs no seccomp filter: probe "seccomp".
	HoleSeccomp Hole = "seccomp"
	// holeLandlock applies no Landlock domain: probe "landlock".
	HoleLandlock Hole = "landlock"
	// holeNetNS shares the host's network namespace (no CLONE_NEWNET;
	// the proxy listener then lives on the host's loopback): probes
	// "interfaces" and "routes".
	HoleNetNS Hole = "netns"
	// holeHomes binds the host's /home and /root read-only at the same
	// place: probe "host_dirs".
	HoleHomes Hole = "homes"
)

// holes lists every hole a test may open that a start-up probe watches.
var Holes = []Hole{HoleUID, HoleCaps, HoleNoNewPrivs, HoleSeccomp, HoleLandlock, HoleNetNS, HoleHomes}

// HoleInitWrites is no hole in the sandbox but a fault of the init's own:
// once the target has started, the init writes a line on its stdout and
// panics (on its stderr). No probe watches it; a test checks that none of
// it reaches the target's streams.
const HoleInitWrites Hole = "init-writes"

// KnownHole reports whether h is a hole a test may open.
func KnownHole(h Hole) bool { return slices.Contains(Holes, h) || h == HoleInitWrites }

// checkHole refuses a hole sent to an init that is not a test binary
// (which no parent does: it would be a broken or forged setup) or one it
// does not know, and records an open hole in the receipt.
func (s *initState) checkHole() error {
	h := Hole(s.cfg.TestHole)
	switch {
	case h == "":
		return nil
	case !s.allowHoles:
		return errors.New("a test hole was sent to an init that is not a test binary")
	case !KnownHole(h):
		return fmt.Errorf("unknown test hole %q", h)
	}
	s.receipt["test_hole"] = string(h) + ": left open on purpose by a test"
	return nil
}

// open reports whether the init leaves hole h open: only in a test
// binary, and only when the parent asked for h.
func (s *initState) open(h Hole) bool {
	return s.cfg.TestHole == string(h) && s.allowHoles
}

// id is the uid and gid the init runs as: sandboxID, or 0 with holeUID.
func (s *initState) id() int {
	if s.open(HoleUID) {
		return 0
	}
	return SandboxID
}

// dropWithoutNoNewPrivs is dropPrivileges for holeNoNewPrivs: Landlock
// and the seccomp filter are applied while the init still holds
// CAP_SYS_ADMIN in its user namespace (which the kernel accepts instead
// of no_new_privs), then every capability is dropped. The end state
// differs from a real drop in no_new_privs alone.
func (s *initState) dropWithoutNoNewPrivs(port int) error {
	if err := s.landlock(port); err != nil {
		return err
	}
	if err := installSeccompKeepNNP(); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	if err := dropCaps(); err != nil {
		return err
	}
	s.receipt["capabilities"] = allCapsDropped
	s.receipt["no_new_privs"] = "not set: test hole"
	s.receipt["seccomp"] = seccomp.Describe()
	return nil
}

// installSeccompKeepNNP installs airlock's filter (seccomp.Program) on
// every thread without setting no_new_privs, which seccomp.Install always
// sets: the caller must hold CAP_SYS_ADMIN. Hand-written because only this
// test hole needs a filter without no_new_privs.
func installSeccompKeepNNP() error {
	prog, err := seccomp.Program()
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("encode filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	switch {
	case errno != 0:
		return fmt.Errorf("install filter: %w", errno)
	case r != 0:
		return fmt.Errorf("install filter: thread %d could not take it", r)
	}
	return nil
}
