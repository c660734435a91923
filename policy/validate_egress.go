package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// checkEgress refuses malformed allowlist and always-blocked entries, an
// always-blocked destination placed in a task's allowlist, and an entry
// that the rule for the host's own addresses refuses (egress.CheckReach):
// such an entry could never be reached, or means less than it says, and
// signals a policy that means something other than what airlock will do.
// It checks the options of an entry written as an object
// (checkEntryOptions), and refuses a host listed twice in a task when
// either of the two carries options.
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
			errs = append(errs, strict.Problem(at, err.Error(), entryHint(b, "write a host name, an IP address or a CIDR")))
		}
		blocked[strings.ToLower(strings.TrimSuffix(b, "."))] = true
	}
	for _, task := range sortedKeys(p.Egress.TaskAllowlist) {
		if !strict.Name(task) {
			errs = append(errs, strict.Problem(strict.Field("egress.taskAllowlist", task),
				fmt.Sprintf("task name %q is empty or has white space or control characters", task), ""))
		}
		seen := map[string]int{}
		for i, ae := range p.Egress.TaskAllowlist[task] {
			entry, base := ae.Host, strict.Index(strict.Field("egress.taskAllowlist", task), i)
			at := base
			if !ae.short {
				at += ".host"
				errs = append(errs, checkEntryOptions(base, ae)...)
			}
			if j, dup := seen[entry]; dup && (!ae.short || !p.Egress.TaskAllowlist[task][j].short) {
				errs = append(errs, strict.Problem(base, fmt.Sprintf("%q is listed twice in task %q, and one of the two carries options", entry, task),
					"list each host once, with its options"))
			}
			seen[entry] = i
			switch {
			case egress.ValidateEntry(entry) != nil:
				errs = append(errs, strict.Problem(at, egress.ValidateEntry(entry).Error(),
					entryHint(entry, `write a host ("pypi.org"), "*.suffix", "*", an IP or a CIDR, each optionally with ":port"`)))
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
		cfg := p.EgressConfig()
		cfg.Credentials = nil // checkCredentials says what is wrong with them, by field
		if _, err := egress.Compile(cfg); err != nil {
			errs = append(errs, strict.Problem("egress", err.Error(), "an allowlisted destination can never be reached past an always-blocked one"))
		}
	}
	return errs
}

// entryHint is the hint for a malformed egress entry: for a URL, the host
// (and port) to write instead; else general.
func entryHint(entry, general string) string {
	scheme, rest, isURL := strings.Cut(entry, "://")
	if !isURL {
		if host, path, ok := strings.Cut(entry, "/"); ok && host != "" && !isAddr(host) {
			return fmt.Sprintf("an entry names a host, not a path (/%s): write %q", path, host)
		}
		return general
	}
	host, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if host == "" {
		return general
	}
	return fmt.Sprintf("an entry names a host, not a URL: drop %q and any path, and write %q (the allowlist decides by host and port, never by scheme or path)", scheme+"://", host)
}

// isAddr reports whether s is an IP address (the first half of a CIDR).
func isAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}
