package doctor

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// landlockFeatures are what each Landlock ABI version added, and the
// first kernel with it.
var landlockFeatures = []struct{ what, kernel string }{
	1: {"filesystem access rights", "5.13"},
	2: {"file reparenting (rename and link across directories)", "5.19"},
	3: {"truncation", "6.2"},
	4: {"TCP bind and connect by port", "6.7"},
	5: {"ioctl on devices", "6.10"},
	6: {"abstract unix socket and signal scoping", "6.12"},
	7: {"audit logging of denials", "6.15"},
}

// landlock reports the Landlock ABI and what it allows airlock to
// enforce: filesystem rules (landlock), TCP port rules (landlock-net,
// ABI 4) and IPC scoping (landlock-scope, ABI 6).
func landlock(p Probes) []Control {
	abi, err := p.LandlockABI()
	fsc := Control{Name: RequireLandlock, Strength: Strong}
	net := Control{Name: RequireLandlockNet, Strength: Strong}
	scope := Control{Name: RequireLandlockScope, Strength: Strong}
	if err != nil || abi < 1 {
		why, fix := landlockUnavailable(p, err)
		for _, c := range []*Control{&fsc, &net, &scope} {
			c.Strength, c.Mechanism, c.Detail, c.Fix = Missing, "none", why, fix
		}
		return []Control{fsc, net, scope}
	}
	var have []string
	for v := 1; v <= abi && v < len(landlockFeatures); v++ {
		have = append(have, landlockFeatures[v].what)
	}
	fsc.Mechanism = fmt.Sprintf("Landlock ABI %d", abi)
	fsc.Detail = "enforces: " + strings.Join(have, ", ")
	net.Mechanism = fmt.Sprintf("Landlock ABI %d TCP rules", abi)
	net.Detail = "the sandbox may connect only to the proxy's port"
	if abi < 4 {
		net.Strength, net.Mechanism = Missing, "none"
		net.Detail = fmt.Sprintf("TCP rules need Landlock ABI 4 (Linux %s); this kernel has ABI %d. The network namespace still leaves the proxy as the only way out",
			landlockFeatures[4].kernel, abi)
		net.Fix = "upgrade to Linux " + landlockFeatures[4].kernel + " or later"
	}
	scope.Mechanism = fmt.Sprintf("Landlock ABI %d scoping", abi)
	scope.Detail = "abstract unix sockets and signals cannot reach outside the sandbox"
	if abi < 6 {
		scope.Strength, scope.Mechanism = Missing, "none"
		scope.Detail = fmt.Sprintf("scoping needs Landlock ABI 6 (Linux %s); this kernel has ABI %d. The network and pid namespaces still close abstract sockets and signals to the host",
			landlockFeatures[6].kernel, abi)
		scope.Fix = "upgrade to Linux " + landlockFeatures[6].kernel + " or later"
	}
	return []Control{fsc, net, scope}
}

// landlockUnavailable explains why the ABI query failed.
func landlockUnavailable(p Probes, err error) (why, fix string) {
	lsms, haveLSM := p.read("sys/kernel/security/lsm")
	active := "the active LSM list is unknown (securityfs is not mounted at /sys/kernel/security)"
	if haveLSM {
		active = "active LSMs: " + lsms
	}
	switch {
	case errors.Is(err, syscall.ENOSYS):
		return "this kernel has no Landlock (it came in Linux 5.13, and needs CONFIG_SECURITY_LANDLOCK=y); " + active,
			"upgrade to Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK=y (6.7 or later for TCP rules)"
	case errors.Is(err, syscall.EOPNOTSUPP):
		list := "landlock,lockdown,yama,integrity,apparmor,bpf"
		if haveLSM && lsms != "" {
			list = "landlock," + lsms
		}
		return "Landlock is built into this kernel but not enabled at boot; " + active,
			"add it to the lsm= kernel parameter, e.g. lsm=" + list + " (in GRUB_CMDLINE_LINUX), then reboot"
	case err != nil:
		return fmt.Sprintf("the Landlock ABI query failed: %v; %s", err, active), ""
	}
	return fmt.Sprintf("the kernel reports Landlock ABI %d; %s", 0, active), ""
}
