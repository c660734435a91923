package sandbox

import (
	"fmt"
	"os"
	"strings"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// hostProvides answers the sandbox's own require names on this host; the
// cgroup names are answered by limits.New.
func hostProvides(name string) (bool, string) {
	switch name {
	case requireUserNS:
		return userNSAvailable()
	case requireSeccomp:
		if !seccompAvailable() {
			return false, "the kernel has no seccomp filter mode"
		}
		return true, ""
	case requireLandlock:
		if v := initproc.LandlockABI(); v < 1 {
			return false, "the kernel has no Landlock"
		}
		return true, ""
	case requireLandlockNet:
		if v := initproc.LandlockABI(); v < 4 {
			return false, fmt.Sprintf("Landlock ABI %d lacks TCP rules (needs 4)", v)
		}
		return true, ""
	case requireLandlockScope:
		if v := initproc.LandlockABI(); v < 6 {
			return false, fmt.Sprintf("Landlock ABI %d lacks IPC scoping (needs 6)", v)
		}
		return true, ""
	}
	return true, "" // the limits package's names
}

// userNSAvailable reports whether this user can make a user namespace,
// and if not, the usual reason.
func userNSAvailable() (bool, string) {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false, "user.max_user_namespaces is 0"
	}
	if os.Geteuid() == 0 {
		return true, ""
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false, "kernel.unprivileged_userns_clone is 0"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" {
		return false, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1, as on Ubuntu 24.04)"
	}
	return true, ""
}
