package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// What the parent does where the host (a container, usually) refuses part
// of what a sandbox is made of: docs/sandbox.md, "Inside a container".

// startInit starts the init in its namespaces. Where the host refuses a
// new network namespace (a container's seccomp profile, a sysctl) but
// the rest starts, the init runs in the host's network namespace instead,
// if the egress can still be held there (sharedNetMode); the error of the
// first start is returned when the second fails too.
func (s *Sandbox) startInit(extra []*os.File, tasks int, need needs) error {
	s.cmd = s.initCmd(extra, tasks)
	first := s.cmd.Start()
	if errors.Is(first, unix.ENOSYS) && s.cmd.SysProcAttr.UseCgroupFD {
		// clone3, which CLONE_INTO_CGROUP needs, is refused (a
		// container's profile refuses it: its flags cannot be read).
		s.noCloneInto = true
		s.cmd = s.initCmd(extra, tasks)
		if first = s.cmd.Start(); first == nil {
			return s.placeAfterStart()
		}
	}
	if first == nil || (s.hole != nil && s.hole.HostNetwork) || !refusal(first) {
		return first
	}
	s.network = initproc.NetShared
	s.cmd = s.initCmd(extra, tasks)
	if err := s.cmd.Start(); err != nil {
		s.network = initproc.NetOwn
		return fmt.Errorf("sandbox: start the init: %w", first)
	}
	// The init waits for its config: the caller's abort kills it if the
	// mode is refused.
	mode, err := s.sharedNetMode(need, first)
	s.network = mode
	if err == nil && s.noCloneInto {
		err = s.placeAfterStart()
	}
	return err
}

// placeAfterStart moves an init started without CLONE_INTO_CGROUP into
// the group's unified directory (cgroup.procs), and says so.
func (s *Sandbox) placeAfterStart() error {
	if err := s.group.Place(s.cmd.Process.Pid); err != nil {
		return fmt.Errorf("sandbox: place the init in its group: %w", err)
	}
	s.receipt["cgroup_clone"] = "clone3 is refused here (a container's seccomp profile): the init was moved into its group by cgroup.procs just after its start"
	return nil
}

// refusal reports whether err, from starting the init, is how a host
// refuses a namespace (a seccomp profile or an LSM: EPERM or EACCES; the
// namespace sysctls: ENOSPC; a kernel without it: EINVAL), rather than a
// passing shortage (EAGAIN, ENOMEM) that must not weaken the sandbox.
func refusal(err error) bool {
	for _, e := range []unix.Errno{unix.EPERM, unix.EACCES, unix.ENOSPC, unix.EINVAL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// sharedNetMode decides how a sandbox in the host's network namespace is
// networked, or refuses it: require "netns" or "egress-proxy" refuses it
// (a host listening on the proxy's port would be reachable: doctor rates
// it weak); with Landlock's TCP rules and the seccomp filter, the proxy
// stays the only way out (NetShared); otherwise only a policy that accepts
// WeakerEgressUnenforced runs (NetUnenforced).
func (s *Sandbox) sharedNetMode(need needs, refused error) (string, error) {
	why := "the host refuses a new network namespace (" + refused.Error() + ")"
	switch {
	case need.netns || need.egress:
		missing := &RequirementError{Why: map[string]string{}}
		for _, r := range []string{RequireNetNS, RequireEgressProxy} {
			if r == RequireNetNS && need.netns || r == RequireEgressProxy && need.egress {
				missing.Missing = append(missing.Missing, r)
				missing.Why[r] = why
			}
		}
		return initproc.NetShared, missing
	case initproc.LandlockABI() >= 4 && seccompAvailable():
		return initproc.NetShared, nil
	case slices.Contains(s.cfg.Weaker, WeakerEgressUnenforced):
		return initproc.NetUnenforced, nil
	}
	lacks := fmt.Sprintf("Landlock ABI %d lacks TCP rules (needs 4)", initproc.LandlockABI())
	if !seccompAvailable() {
		lacks = "there is no seccomp filter"
	}
	return initproc.NetShared, fmt.Errorf("sandbox: %w: %s, and %s: the egress proxy would not be the only way out. "+
		`A policy may accept that with "weakerModes": [%q] (docs/sandbox.md, "Inside a container")`,
		ErrRequirement, why, lacks, WeakerEgressUnenforced)
}

// hostNetwork reports whether the init is started in the host's network
// namespace.
func (s *Sandbox) hostNetwork() bool {
	return s.network != initproc.NetOwn || (s.hole != nil && s.hole.HostNetwork)
}

// namespacesReceipt lists the namespaces the init was started in.
func (s *Sandbox) namespacesReceipt() string {
	if s.hostNetwork() {
		return "user, pid, mount, ipc, uts, cgroup; no network namespace: the host refuses one"
	}
	return "user, pid, mount, network, ipc, uts, cgroup"
}

// setsGroups reports whether the init's credentials can give it an empty
// group list and its namespace map 65534 to another id: for root whose
// user namespace allows setgroups(2). The root of a rootless container
// is not such a root (its namespace denies setgroups to the namespaces it
// makes): it runs the sandbox as a rootless user does.
var setsGroups = sync.OnceValue(func() bool {
	if os.Geteuid() != 0 {
		return false
	}
	b, err := os.ReadFile("/proc/self/setgroups")
	return err != nil || strings.TrimSpace(string(b)) != "deny"
})

// sandboxHostIDs returns the uid and gid that a rootful caller maps the
// sandbox's 65534 to: 65534 itself, or, where this process's user
// namespace has no 65534 (the root of a rootless container, whose
// namespace holds the caller's own uid alone), root's own 0.
var sandboxHostIDs = sync.OnceValues(func() (int, int) {
	if idMapped("/proc/self/uid_map", initproc.SandboxID) && idMapped("/proc/self/gid_map", initproc.SandboxID) {
		return initproc.SandboxID, initproc.SandboxID
	}
	return os.Getuid(), os.Getgid()
})

// idMapped reports whether id is inside one of the ranges of the id map
// file path ("inside outside count" lines).
func idMapped(path string, id int) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		start, err1 := strconv.ParseUint(f[0], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 == nil && err2 == nil && uint64(id) >= start && uint64(id)-start < count {
			return true
		}
	}
	return false
}
