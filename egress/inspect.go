package egress

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Protocol is what the first bytes of a tunnel to an entry must be
// (docs/egress.md, "What a tunnel carries").
type Protocol string

// The protocols an entry may name.
const (
	// ProtocolAuto, the default: a tunnel to port 443 must carry TLS;
	// TLS on any port must name the tunnel's host (SNI), and plain HTTP
	// on any port must name it in every request's Host header.
	ProtocolAuto Protocol = "auto"
	// ProtocolTLS: the tunnel must open with a TLS ClientHello naming
	// the tunnel's host.
	ProtocolTLS Protocol = "tls"
	// ProtocolHTTP: the tunnel must carry plain HTTP requests, each
	// naming the tunnel's host.
	ProtocolHTTP Protocol = "http"
	// ProtocolRaw: the tunnel's bytes are not looked at.
	ProtocolRaw Protocol = "raw"
)

// EntryConfig is what an allowlist entry may carry beyond its host, in
// plain types. The zero value is an opaque tunnel with ProtocolAuto.
type EntryConfig struct {
	// Inspect makes the proxy terminate the entry's TLS with a
	// certificate of the session's CA and decide every request by Rules.
	Inspect bool
	// Rules decide the requests to an inspected entry: deny rules win,
	// and once there is a rule, what no allow rule matches is refused.
	// No rules allow every request (but WebSocket upgrades).
	Rules []RuleConfig
	// UpstreamCA names a PEM file of the CAs the destination's
	// certificate must chain to; "" means the host's roots.
	UpstreamCA string
	// Protocol is what a tunnel to the entry must carry; "" means
	// ProtocolAuto.
	Protocol Protocol
}

// RuleConfig is one rule on the requests to an inspected entry. Every
// condition given must hold for the rule to match; a condition left out
// matches any request.
type RuleConfig struct {
	// Name names the rule in decisions and the audit stream.
	Name string
	// Deny makes a matching request refused, whatever allows it.
	Deny bool
	// Methods are the HTTP methods matched (KnownMethods).
	Methods []string
	// Paths are globs over the request's decoded path: "*" matches within
	// one segment, "**" across segments. PathPrefixes are plain prefixes.
	// A request matches when its path matches one of either.
	Paths, PathPrefixes []string
	// Query maps a query parameter to the values it may have ("*": any
	// value). For an allow rule the parameter must be present and each
	// of its values listed; for a deny rule one listed value is enough.
	Query map[string][]string
	// Headers are conditions on request headers, as Query is on the query.
	Headers map[string][]string
	// WebSocket lets an allow rule's requests upgrade to WebSocket.
	WebSocket bool
}

// KnownMethods are the HTTP methods a rule or a credential may name: RFC
// 9110's, PATCH, and WebDAV's (git's dumb HTTP push uses them).
var KnownMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE",
	"PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK"}

// Entry is a compiled allowlist entry's options: what the proxy does with
// a tunnel the entry allowed. A nil *Entry is an opaque entry with
// ProtocolAuto.
type Entry struct {
	task, raw  string
	inspect    bool
	protocol   Protocol
	upstreamCA string
	rules      []*httpRule
}

// Inspected reports whether the entry's tunnels are terminated and their
// requests decided by its rules.
func (e *Entry) Inspected() bool { return e != nil && e.inspect }

// Protocol is what a tunnel to the entry must carry.
func (e *Entry) Protocol() Protocol {
	if e == nil || e.protocol == "" {
		return ProtocolAuto
	}
	return e.protocol
}

// UpstreamCA is the PEM file of the CAs the destination's certificate
// must chain to, "" for the host's roots.
func (e *Entry) UpstreamCA() string {
	if e == nil {
		return ""
	}
	return e.upstreamCA
}

// HasRules reports whether the entry has rules (so that what they do not
// allow is refused).
func (e *Entry) HasRules() bool { return e != nil && len(e.rules) > 0 }

// compileEntry checks and compiles the options of task's entry raw.
func compileEntry(task, raw string, c EntryConfig) (*Entry, error) {
	e := &Entry{task: task, raw: raw, inspect: c.Inspect, protocol: c.Protocol, upstreamCA: c.UpstreamCA}
	switch c.Protocol {
	case "", ProtocolAuto, ProtocolTLS, ProtocolHTTP, ProtocolRaw:
	default:
		return nil, fmt.Errorf("protocol %q is not one of auto, tls, http, raw", c.Protocol)
	}
	if !c.Inspect && (len(c.Rules) > 0 || c.UpstreamCA != "") {
		return nil, errors.New(`rules and upstreamCa need "inspect": true: the proxy reads requests only on the tunnels it inspects`)
	}
	if c.Inspect && c.Protocol == ProtocolRaw {
		return nil, errors.New(`an inspected entry carries HTTP or HTTPS: its protocol cannot be "raw"`)
	}
	var errs []error
	seen := map[string]bool{}
	for i, rc := range c.Rules {
		r, err := compileRule(rc)
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %d (%q): %w", i, rc.Name, err))
			continue
		}
		if seen[rc.Name] {
			errs = append(errs, fmt.Errorf("rule %d: the name %q is used twice", i, rc.Name))
		}
		seen[rc.Name] = true
		e.rules = append(e.rules, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Deny rules are tried first: deny wins, whatever the order written.
	slices.SortStableFunc(e.rules, func(a, b *httpRule) int {
		switch {
		case a.deny == b.deny:
			return 0
		case a.deny:
			return -1
		}
		return 1
	})
	return e, nil
}

// Entry returns the options of task's allowlist entry, named as written
// in the policy (the Rule of the gate's allow); nil when the entry has
// none, which is an opaque tunnel with ProtocolAuto.
func (g *Gate) Entry(task, entry string) *Entry {
	if g == nil || g.tasks[task] == nil {
		return nil
	}
	return g.tasks[task].entries[entry]
}

// Inspects reports whether any entry of task is inspected, so that its
// sandbox needs the session's CA.
func (g *Gate) Inspects(task string) bool {
	if g == nil || g.tasks == nil || g.tasks[task] == nil {
		return false
	}
	for _, e := range g.tasks[task].entries {
		if e.inspect {
			return true
		}
	}
	return false
}

// Reaches returns the entries of task's allowlist that reach host, a
// name or an IP literal, on any port (each as written, with whether it is
// inspected), for a validator: a policy that names a host for a
// credential or a budget must allow it.
func (g *Gate) Reaches(task, host string) map[string]bool {
	if g == nil || g.tasks == nil || g.tasks[task] == nil {
		return nil
	}
	al := g.tasks[task]
	t, err := ParseTarget(host, 0)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	add := func(ps *portSet) {
		if ps == nil {
			return
		}
		if ps.anyPort != nil {
			out[ps.anyPort.entry] = al.entries[ps.anyPort.entry].Inspected()
		}
		for _, r := range ps.ports {
			out[r.entry] = al.entries[r.entry].Inspected()
		}
	}
	if t.Name != "" {
		if ps, ok := al.exact[t.Name]; ok {
			add(ps)
		}
		for s := t.Name; strings.IndexByte(s, '.') >= 0; {
			s = s[strings.IndexByte(s, '.')+1:]
			if ps, ok := al.suffix[s]; ok {
				add(ps)
			}
		}
	} else {
		for _, l := range al.prefixes.lens[familyIndex(t.Addr)] {
			if ps, ok := al.prefixes.get(t.Addr, l); ok {
				add(ps)
			}
		}
	}
	add(&al.wildcard)
	return out
}

// ValidateCredentialHost reports whether host names one destination, as a
// credential's host must: a name or an IP address, optionally with a port.
func ValidateCredentialHost(host string) error {
	_, err := compileCredential(CredentialConfig{Name: "x", Host: host})
	return err
}
