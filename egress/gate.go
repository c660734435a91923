package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/decision"
)

// Config is the egress part of a policy, in plain types.
type Config struct {
	// TaskAllowlist maps a task to its allowlist entries: exact host,
	// "*.suffix", "*", IP literal or CIDR, each with an optional ":port".
	TaskAllowlist map[string][]string
	// AlwaysBlocked adds names, addresses and CIDRs to the built-in floor
	// of metadata and link-local destinations that no policy can remove.
	AlwaysBlocked []string
}

// Gate is a compiled egress policy. It is safe for concurrent use. The
// zero value, and a nil *Gate, deny everything.
type Gate struct {
	block *blockTable
	tasks map[string]*allowlist
}

// Compile validates cfg and builds the gate's lookup structures once.
// Every malformed entry is reported, each error naming its task and entry;
// so is an allowlist entry that can reach only always-blocked destinations.
func Compile(cfg Config) (*Gate, error) {
	g := &Gate{block: &blockTable{}, tasks: make(map[string]*allowlist)}
	for n, b := range floor.names.m {
		g.block.names.setIfAbsent(n, b)
	}
	floor.addrs.each(func(p netip.Prefix, b blockRule) { g.block.addrs.insert(p, b) })
	var errs []error
	for _, s := range cfg.AlwaysBlocked {
		e, err := parseBlockedEntry(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("egress: alwaysBlocked entry %q: %w", s, err))
			continue
		}
		b := blockRule{entry: s}
		switch e.kind {
		case kindExact:
			g.block.names.setIfAbsent(e.name, b)
		case kindPrefix:
			g.block.addrs.insert(e.prefix, b)
		}
	}
	tasks := make([]string, 0, len(cfg.TaskAllowlist))
	for task := range cfg.TaskAllowlist {
		tasks = append(tasks, task)
	}
	slices.Sort(tasks)
	for _, task := range tasks {
		if strings.TrimSpace(task) == "" {
			errs = append(errs, fmt.Errorf("egress: task %q: empty task name", task))
			continue
		}
		al := &allowlist{}
		for _, s := range cfg.TaskAllowlist[task] {
			e, err := parseEntry(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("egress: task %q: allowlist entry %q: %w", task, s, err))
				continue
			}
			if g.block.coversEntry(e) {
				errs = append(errs, fmt.Errorf("egress: task %q: allowlist entry %q: always blocked, so it can never be allowed (remove it)", task, s))
				continue
			}
			al.add(e)
		}
		g.tasks[task] = al
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return g, nil
}

// path is the branch a decision took.
type path uint8

const (
	pathNoGate path = iota
	pathEmpty
	pathMalformed
	pathBlockedName
	pathBlockedAddr
	pathNoTask
	pathDefault
	pathAllowed
	pathNonPublic
)

// verdict is a decision before its reason is written.
type verdict struct {
	path  path
	rule  *rule
	block blockRule
	view  netip.Addr // the address that was blocked or non-public
	class string     // pathNonPublic: the class of view
	cause string     // pathMalformed
	al    *allowlist
}

// decide runs the gate on a normalised target without writing a reason.
func (g *Gate) decide(task string, t Target) (verdict, Target) {
	if g == nil || g.block == nil || g.tasks == nil {
		return verdict{path: pathNoGate}, t
	}
	if t.Name != "" && !isCanonicalName(t.Name) {
		// A Target built by hand rather than by ParseTarget: normalise it,
		// so that "METADATA.google.internal." or "169.254.169.254" written
		// as a name cannot slip past the checks below.
		nt, err := ParseTarget(t.Name, t.Port)
		if err != nil {
			return verdict{path: pathMalformed, cause: causeOf(err)}, t
		}
		t = nt
	}
	if t.Name != "" {
		if b, ok := g.block.name(t.Name); ok {
			return verdict{path: pathBlockedName, block: b}, t
		}
		al := g.tasks[task]
		if al == nil {
			return verdict{path: pathNoTask}, t
		}
		if r := al.matchName(t.Name, t.Port); r != nil {
			return verdict{path: pathAllowed, rule: r, al: al}, t
		}
		return verdict{path: pathDefault}, t
	}
	if !t.Addr.IsValid() {
		return verdict{path: pathEmpty}, t
	}
	if t.Addr.Zone() != "" {
		return verdict{path: pathMalformed, cause: ErrZone.Error()}, t
	}
	t.Addr = t.Addr.Unmap()
	if b, view, ok := g.block.addr(t.Addr); ok {
		return verdict{path: pathBlockedAddr, block: b, view: view}, t
	}
	al := g.tasks[task]
	if al == nil {
		return verdict{path: pathNoTask}, t
	}
	if r := al.matchPrefix(t.Addr, t.Port); r != nil {
		return verdict{path: pathAllowed, rule: r, al: al}, t
	}
	if r := al.wildcard.match(t.Port); r != nil {
		if class, public := classify(t.Addr); !public {
			return verdict{path: pathNonPublic, rule: r, view: t.Addr, class: class}, t
		}
		return verdict{path: pathAllowed, rule: r, al: al}, t
	}
	return verdict{path: pathDefault}, t
}

// decision writes v's reason.
func (v verdict) decision(task string, t Target) decision.Decision {
	d := decision.Decision{Gate: decision.GateEgress}
	switch v.path {
	case pathNoGate:
		d.Reason = reasonNoGate
	case pathEmpty:
		d.Reason = reasonEmpty(task)
	case pathMalformed:
		d.Reason = reasonMalformed(task, t.Host(), v.cause)
	case pathBlockedName:
		d.Reason, d.Rule = reasonBlockedName(task, t, v.block), v.block.entry
	case pathBlockedAddr:
		d.Reason, d.Rule = reasonBlockedAddr(task, t, v.view, v.block), v.block.entry
	case pathNoTask:
		d.Reason = reasonNoTask(task, t)
	case pathDefault:
		d.Reason = reasonDefault(task, t)
	case pathAllowed:
		d.Verdict, d.Reason, d.Rule = decision.Allow, reasonAllowed(task, t, v.rule), v.rule.entry
	case pathNonPublic:
		d.Reason, d.Rule = reasonNonPublic(task, t, v.view, v.class, v.rule), v.rule.entry
	}
	return d
}

// Check is the static decision for task on t: always-blocked first, then
// the task's allowlist, then deny. For a name, Allow means the name may be
// resolved; the caller must then decide on the addresses with CheckResolved.
//
// Rule is the matched allowlist entry as written in the policy (or the
// always-blocked entry for a block); the reason names task, host and
// entry. An IP literal reached only through "*" must be public.
func (g *Gate) Check(task string, t Target) decision.Decision {
	v, nt := g.decide(task, t)
	return v.decision(task, nt)
}

// CheckHost parses host as ParseTarget does and checks it; a malformed
// host is denied with a reason saying why.
func (g *Gate) CheckHost(task, host string, port uint16) (decision.Decision, Target) {
	t, err := ParseTarget(host, port)
	if err != nil {
		return verdict{path: pathMalformed, cause: causeOf(err)}.decision(task, Target{Name: host}), Target{}
	}
	return g.Check(task, t), t
}

// CheckHostPort splits and parses hostport as SplitHostPort does and
// checks it; a malformed host is denied with a reason saying why.
func (g *Gate) CheckHostPort(task, hostport string, defaultPort uint16) (decision.Decision, Target) {
	t, err := SplitHostPort(hostport, defaultPort)
	if err != nil {
		return verdict{path: pathMalformed, cause: causeOf(err)}.decision(task, Target{Name: hostport}), Target{}
	}
	return g.Check(task, t), t
}

// CheckResolved decides on a name after one resolution: it denies the name
// when any address is always blocked, and otherwise returns the addresses
// that may be dialled, in the resolver's order.
//
// A non-public address (loopback, private, CGNAT, unique-local, ...) is
// kept only when the name matched an exact-host entry or an IP/CIDR entry
// of the task covers it: a wildcard entry never reaches one. Such
// addresses are dropped; when none remains the name is denied. The
// returned slice is new (zones removed); the caller must dial only these
// addresses and must not resolve the name again. For an IP-literal target
// addrs is ignored and the result is the literal itself.
func (g *Gate) CheckResolved(task string, t Target, addrs []netip.Addr) (decision.Decision, []netip.Addr) {
	v, nt := g.decide(task, t)
	if v.path != pathAllowed {
		return v.decision(task, nt), nil
	}
	if nt.Name == "" {
		return v.decision(task, nt), []netip.Addr{nt.Addr}
	}
	d := decision.Decision{Gate: decision.GateEgress}
	if len(addrs) == 0 {
		d.Reason = reasonDNSEmpty(task, nt)
		return d, nil
	}
	for _, a := range addrs {
		if b, view, ok := g.block.addr(a); ok {
			d.Reason, d.Rule = reasonBlockedDNS(task, nt, view, b), b.entry
			return d, nil
		}
	}
	out := make([]netip.Addr, 0, len(addrs))
	var refused netip.Addr
	var refusedClass string
	for _, a := range addrs {
		a = a.WithZone("")
		if !a.IsValid() {
			if refusedClass == "" {
				refused, refusedClass = a, "unusable"
			}
			continue
		}
		if v.rule.kind == kindExact || v.al.matchPrefix(a.Unmap(), nt.Port) != nil {
			out = append(out, a)
			continue
		}
		class, public := classify(a)
		if public {
			out = append(out, a)
			continue
		}
		if refusedClass == "" {
			refused, refusedClass = a, class
		}
	}
	if len(out) == 0 {
		d.Reason, d.Rule = reasonDNSNonPublic(task, nt, refused, refusedClass, v.rule), v.rule.entry
		return d, nil
	}
	d.Verdict, d.Rule = decision.Allow, v.rule.entry
	if dropped := len(addrs) - len(out); dropped > 0 {
		d.Reason = reasonAllowedSome(task, nt, v.rule, dropped, len(addrs))
	} else {
		d.Reason = reasonAllowed(task, nt, v.rule)
	}
	return d, out
}
