package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// checkEntryOptions checks what an allowlist entry written as an object
// carries: rules only on an inspected entry, each rule well formed.
func checkEntryOptions(at string, e AllowEntry) []*Error {
	var errs []*Error
	if !e.Inspect {
		if len(e.Rules) > 0 {
			errs = append(errs, strict.Problem(at+".rules", fmt.Sprintf("rules on %q, which is not inspected", e.Host),
				`add "inspect": true: the proxy reads the requests of inspected hosts only (an opaque tunnel's are encrypted)`))
		}
		if e.UpstreamCA != "" {
			errs = append(errs, strict.Problem(at+".upstreamCa", fmt.Sprintf("upstreamCa on %q, which is not inspected", e.Host),
				`add "inspect": true, or remove upstreamCa: the sandbox's own TLS checks an opaque tunnel's certificate`))
		}
	}
	if e.UpstreamCA != "" && (!path.IsAbs(e.UpstreamCA) || path.Clean(e.UpstreamCA) != e.UpstreamCA) {
		errs = append(errs, strict.Problem(at+".upstreamCa", fmt.Sprintf("upstreamCa %q is not a clean absolute path", e.UpstreamCA), "name the PEM file by its absolute path"))
	}
	if e.Inspect && e.Protocol == string(egress.ProtocolRaw) {
		errs = append(errs, strict.Problem(at+".protocol", `an inspected host carries HTTP or HTTPS: its protocol cannot be "raw"`, "remove the protocol, or inspect"))
	}
	if !slices.Contains([]string{"", "auto", "tls", "http", "raw"}, e.Protocol) {
		errs = append(errs, strict.Problem(at+".protocol", fmt.Sprintf("unknown protocol %q", e.Protocol), "write auto, tls, http or raw"))
	}
	names := map[string]bool{}
	for i, r := range e.Rules {
		rat := strict.Index(at+".rules", i)
		if names[r.Name] {
			errs = append(errs, strict.Problem(rat+".name", fmt.Sprintf("duplicate rule name %q on %q", r.Name, e.Host), "rule names identify decisions in the audit stream"))
		}
		names[r.Name] = true
		if !strict.Name(r.Name) {
			errs = append(errs, strict.Problem(rat+".name", fmt.Sprintf("rule name %q is empty or has white space or control characters", r.Name), ""))
		}
		if r.Action != "" && r.Action != "allow" && r.Action != "deny" {
			errs = append(errs, strict.Problem(rat+".action", fmt.Sprintf("unknown action %q", r.Action), "write allow or deny"))
		}
		if r.WebSocket && r.Action == "deny" {
			errs = append(errs, strict.Problem(rat+".websocket", "websocket on a deny rule", "a deny rule refuses the upgrade with the request; put websocket on an allow rule"))
		}
		errs = append(errs, checkMatch(rat, r.Methods, r.Paths, r.PathPrefixes)...)
		errs = append(errs, checkConditions(rat+".query", r.Query, false)...)
		errs = append(errs, checkConditions(rat+".headers", r.Headers, true)...)
	}
	return errs
}

// checkMatch checks the methods and paths of a rule or a credential.
func checkMatch(at string, methods, paths, prefixes []string) []*Error {
	var errs []*Error
	for i, m := range methods {
		if !slices.Contains(egress.KnownMethods, m) {
			errs = append(errs, strict.Problem(strict.Index(at+".methods", i), fmt.Sprintf("unknown method %q", m),
				"known methods (upper case): "+strings.Join(egress.KnownMethods, ", ")))
		}
	}
	for i, g := range paths {
		if err := egress.ValidateGlob(g); err != nil {
			errs = append(errs, strict.Problem(strict.Index(at+".paths", i), err.Error(), `write an absolute path glob: "*" within a segment, "**" across ("/repos/acme/**")`))
		}
	}
	for i, p := range prefixes {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, strict.Problem(strict.Index(at+".pathPrefixes", i), fmt.Sprintf("path prefix %q does not start with /", p), ""))
		}
	}
	return errs
}

// checkConditions checks query or header conditions.
func checkConditions(at string, m map[string][]string, header bool) []*Error {
	var errs []*Error
	for _, k := range sortedKeys(m) {
		kat := strict.Field(at, k)
		switch {
		case k == "":
			errs = append(errs, strict.Problem(kat, "empty name", ""))
		case header && egress.ValidateRuleHeader(k) != nil:
			errs = append(errs, strict.Problem(kat, egress.ValidateRuleHeader(k).Error(), ""))
		case len(m[k]) == 0:
			errs = append(errs, strict.Problem(kat, fmt.Sprintf("%q lists no values", k), `write ["*"] for any value`))
		}
	}
	return errs
}

// token reports whether s is an HTTP token (a header name).
func token(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}
