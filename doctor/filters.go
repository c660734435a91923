package doctor

import (
	"context"
	"fmt"
)

// noNewPrivs reports no_new_privs: setuid binaries and file capabilities
// grant nothing once it is set (Linux 3.5; shown in /proc/self/status
// since 4.10).
func noNewPrivs(p Probes) Control {
	c := Control{Name: RequireNoNewPrivs, Mechanism: "prctl(PR_SET_NO_NEW_PRIVS)", Strength: Strong,
		Detail: "setuid binaries and file capabilities grant nothing inside the sandbox"}
	if _, ok := p.status()["NoNewPrivs"]; !ok && !p.SeccompFilter() {
		c.Strength, c.Mechanism = Missing, "none"
		c.Detail = "the kernel shows no NoNewPrivs field and has no seccomp filter mode: it predates no_new_privs"
		c.Fix = "upgrade to a supported kernel (4.14 or later)"
	}
	return c
}

// seccompControl reports seccomp filter mode with KILL_PROCESS, which
// airlock's filter needs.
func seccompControl(ctx context.Context, p Probes) Control {
	c := Control{Name: RequireSeccomp, Mechanism: p.SeccompFilterDescription, Strength: Strong}
	st := p.status()
	mode, hasField := st["Seccomp"]
	if p.SeccompFilter() {
		switch mode {
		case "0", "":
			c.Detail = "seccomp filter mode with SECCOMP_RET_KILL_PROCESS"
		default:
			c.Detail = fmt.Sprintf("this process already runs under seccomp mode %s with %s filter(s) (a container runtime's?); airlock's filter stacks on it, and the stricter answer wins",
				mode, orUnknown(st["Seccomp_filters"]))
		}
		if err := p.SeccompStack(ctx); err != nil {
			c.Strength, c.Mechanism = Missing, "none"
			c.Detail += fmt.Sprintf("; but installing airlock's filters in a child failed: %v", err)
			c.Fix = "let this process use seccomp(2) (a container's profile may refuse it)"
		}
		return c
	}
	c.Strength, c.Mechanism = Missing, "none"
	if !hasField {
		c.Detail = "the kernel has no seccomp (no Seccomp field in /proc/self/status)"
		c.Fix = "use a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y"
		return c
	}
	c.Detail = "the kernel lacks seccomp filter mode or SECCOMP_RET_KILL_PROCESS (Linux 4.14)"
	c.Fix = "upgrade to Linux 4.14 or later built with CONFIG_SECCOMP_FILTER=y"
	return c
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown number of"
	}
	return s
}
