package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// checkEgress refuses malformed allowlist and always-blocked entries, an
// always-blocked destination placed in a task's allowlist, and an entry
// that the rule for the host's own addresses refuses (egress.CheckReach):
// such an entry could never be reached, or means less than it says, and
// signals a policy that means something other than what airlock will do.
func checkEgress(p *Policy) []*Error {
	if p.Egress == nil {
		return nil
	}
	var errs []*Error
	var reach *egress.ReachError
	blocked := map[string]bool{}
	for i, b := range p.Egress.AlwaysBlocked {
		at := fmt.Sprintf("egress.alwaysBlocked[%d]", i)
		if err := egress.ValidateBlockedEntry(b); err != nil {
			errs = append(errs, strict.Problem(at, err.Error(), "write a host name, an IP address or a CIDR"))
		}
		blocked[strings.ToLower(strings.TrimSuffix(b, "."))] = true
	}
	for _, task := range sortedKeys(p.Egress.TaskAllowlist) {
		if !strict.Name(task) {
			errs = append(errs, strict.Problem(strict.Field("egress.taskAllowlist", task),
				fmt.Sprintf("task name %q is empty or has white space or control characters", task), ""))
		}
		for i, entry := range p.Egress.TaskAllowlist[task] {
			at := strict.Index(strict.Field("egress.taskAllowlist", task), i)
			switch {
			case egress.ValidateEntry(entry) != nil:
				errs = append(errs, strict.Problem(at, egress.ValidateEntry(entry).Error(),
					`write a host ("pypi.org"), "*.suffix", "*", an IP or a CIDR, each optionally with ":port"`))
			case egress.IsAlwaysBlockedEntry(entry):
				errs = append(errs, strict.Problem(at, fmt.Sprintf("%q is always blocked (cloud metadata or link-local) and can never be allowlisted", entry),
					"remove it: no policy can reach metadata endpoints"))
			case errors.As(egress.CheckReach(entry), &reach):
				// A localhost name, a catch-all range, or loopback without a
				// port: refused rather than quietly meaning less than it says
				// (docs/egress.md, "The host's own addresses").
				errs = append(errs, strict.Problem(at, fmt.Sprintf("%q: %s", entry, reach.Problem), reach.Hint))
			case blocked[strings.ToLower(strings.TrimSuffix(entry, "."))]:
				errs = append(errs, strict.Problem(at, fmt.Sprintf("%q is also in egress.alwaysBlocked, which wins", entry),
					"remove it from one of the two lists"))
			}
		}
	}
	if len(errs) == 0 {
		// The entry checks passed; the gate's own compilation catches what
		// only the whole section shows (an allowlisted subdomain of a
		// blocked name).
		if _, err := egress.Compile(p.EgressConfig()); err != nil {
			errs = append(errs, strict.Problem("egress", err.Error(), "an allowlisted destination can never be reached past an always-blocked one"))
		}
	}
	return errs
}
