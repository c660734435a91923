package enforcer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/sandbox"
)

// ErrEnv is matched (errors.Is) by the error of Run and Session.Exec
// when the request's Env sets a variable airlock sets itself to contain
// the command (a proxy variable; where the task inspects a host, the CA
// bundle's; a credential's placeholder), or has an entry that is not
// NAME=VALUE. Nothing was decided or run, and the result's ExitCode is
// ExitUsage.
var ErrEnv = errors.New("enforcer: env")

// childEnv is a command's whole environment: the sandbox's base
// (sandbox.BaseEnv), then the egress kit's variables, then the request's,
// each name once: a later entry replaces an earlier one of the same name
// in its place.
func childEnv(searchPath, kit, req []string) []string {
	base := sandbox.BaseEnv(searchPath)
	out := make([]string, 0, len(base)+len(kit)+len(req))
	at := make(map[string]int, cap(out))
	for _, layer := range [][]string{base, kit, req} {
		for _, kv := range layer {
			name, _, _ := strings.Cut(kv, "=")
			if i, ok := at[name]; ok {
				out[i] = kv
				continue
			}
			at[name] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

// checkEnv refuses a request's environment for task when an entry is not
// NAME=VALUE, or sets a variable airlock sets for containment
// (ErrEnv): said, never dropped in silence.
func (e *Enforcer) checkEnv(task string, env []string) error {
	if len(env) == 0 {
		return nil
	}
	var kit []string
	if e.egress.Inspects(task) {
		kit = append(kit, caBundleVars...)
	}
	for _, c := range credentialsFor(e.pol, e.egress, task) {
		if c.SandboxEnv != "" {
			kit = append(kit, c.SandboxEnv)
		}
	}
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "" || strings.IndexByte(kv, 0) >= 0:
			return fmt.Errorf("%w: %q: want NAME=VALUE, with no NUL byte", ErrEnv, kv)
		case sandbox.IsProxyVar(name):
			return fmt.Errorf("%w: %s: the sandbox's proxy variables are airlock's, so that every client goes through the egress proxy "+
				"(NO_PROXY is empty: the proxy decides loopback too, by the task's allowlist)", ErrEnv, name)
		case slices.Contains(kit, name):
			return fmt.Errorf("%w: %s: task %q sets it, for the egress proxy (the CA bundle of its inspected hosts, or a credential's placeholder)",
				ErrEnv, name, task)
		}
	}
	return nil
}

// envRefused is the result of a request whose environment checkEnv
// refused.
func envRefused(runID, session string, step int, err error) Result {
	res := SetupResult(runID, session, step, err)
	res.ExitCode = ExitUsage
	return res
}
