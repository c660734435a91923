package doctor

import (
	"fmt"
	"slices"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// The names a policy's "require" list may use. Each is the name of the
// control that Check reports for it. The cgroup names are the limits
// package's, which enforces them.
const (
	RequireUserNS        = "userns"
	RequirePIDNS         = "pidns"
	RequireMountNS       = "mountns"
	RequireNetNS         = "netns"
	RequireIPCNS         = "ipcns"
	RequireUTSNS         = "utsns"
	RequireCgroupNS      = "cgroupns"
	RequirePivotRoot     = "pivot-root"
	RequireNoNewPrivs    = "no-new-privs"
	RequireSeccomp       = "seccomp"
	RequireLandlock      = "landlock"
	RequireLandlockNet   = "landlock-net"
	RequireLandlockScope = "landlock-scope"
	RequireCgroup        = limits.RequireCgroup
	RequireCgroupMemory  = limits.RequireCgroupMemory
	RequireCgroupPids    = limits.RequireCgroupPids
	RequireCgroupCPU     = limits.RequireCgroupCPU
	RequireEgressProxy   = "egress-proxy"
	RequirePrivileges    = "privileges"
	RequireOpenFiles     = "open-files"
)

// RequireProcFS is met where a sandbox gets a /proc of its own pid
// namespace (a container's masked /proc refuses a fresh one).
const RequireProcFS = "procfs"

// WeakerEgressUnenforced is the weaker mode (a policy's "weakerModes")
// that runs a sandbox whose egress the kernel does not hold.
const WeakerEgressUnenforced = "egress-unenforced"

// WeakerTrustd is the weaker mode that lets processes on macOS reach
// trustd, whose certificate fetches bypass the proxy (package seatbelt).
const WeakerTrustd = seatbelt.WeakerTrustd

// WeakerModeNames returns every name a policy's "weakerModes" may use.
func WeakerModeNames() []string { return []string{WeakerEgressUnenforced, WeakerTrustd} }

// requirementNames lists them in report order.
var requirementNames = []string{
	RequirePrivileges, RequireUserNS, RequirePIDNS, RequireMountNS, RequireNetNS, RequireIPCNS,
	RequireUTSNS, RequireCgroupNS, RequirePivotRoot, RequireNoNewPrivs,
	RequireSeccomp, RequireLandlock, RequireLandlockNet, RequireLandlockScope,
	RequireCgroup, RequireCgroupMemory, RequireCgroupPids, RequireCgroupCPU,
	RequireOpenFiles, RequireEgressProxy, RequireProcFS,
}

// RequirementNames returns every name a policy's "require" list may use,
// in report order. The policy validator rejects any other name.
func RequirementNames() []string { return slices.Clone(requirementNames) }

// IsRequirement reports whether name is one of RequirementNames.
func IsRequirement(name string) bool { return slices.Contains(requirementNames, name) }

// Unmet is a required control that this host does not enforce strongly.
type Unmet struct {
	// Name is the requirement as the policy spells it.
	Name string `json:"name"`
	// Strength is what the host offers: weak or missing ("" for an
	// unknown name).
	Strength Strength `json:"strength,omitempty"`
	// Reason is a fixed sentence naming the requirement and what the host
	// offers instead.
	Reason string `json:"reason"`
	// Fix is the control's fix, when there is one.
	Fix string `json:"fix,omitempty"`
}

// Satisfies returns the requirements in require that r does not meet, in
// the order given. A requirement is met only by a strong control: a weak
// fallback (an rlimit where a cgroup was required) is the silent
// degradation that "require" exists to refuse.
func Satisfies(r Report, require []string) []Unmet {
	var out []Unmet
	for _, name := range require {
		if !IsRequirement(name) {
			out = append(out, Unmet{Name: name,
				Reason: fmt.Sprintf("policy requires %q, which is not a control airlock knows", name)})
			continue
		}
		c, ok := r.Control(name)
		if !ok {
			out = append(out, Unmet{Name: name, Strength: Missing,
				Reason: fmt.Sprintf("policy requires %s; the report has no such control", name)})
			continue
		}
		if c.Strength == Strong {
			continue
		}
		reason := fmt.Sprintf("policy requires %s; this host enforces it only weakly, by %s", name, c.Mechanism)
		if c.Strength == Missing {
			reason = fmt.Sprintf("policy requires %s; this host does not have it", name)
		}
		if c.Detail != "" {
			reason += ": " + c.Detail
		}
		out = append(out, Unmet{Name: name, Strength: c.Strength, Reason: reason, Fix: c.Fix})
	}
	return out
}
