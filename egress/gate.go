package egress

import (
	"errors"
	"fmt"
	"maps"
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
	// Local holds the addresses of the host the proxy dials from, which,
	// like loopback, only an IP or CIDR entry naming the port reaches
	// (docs/egress.md). nil means HostAddrs(), this host's.
	Local LocalAddrs
	// Entries holds the options of allowlist entries, by task and by the
	// entry as written in TaskAllowlist: inspection and its rules, the
	// protocol a tunnel must carry. An entry without options is an opaque
	// tunnel with ProtocolAuto.
	Entries map[string]map[string]EntryConfig
	// Credentials say which requests get which credential (their values
	// are the proxy's).
	Credentials []CredentialConfig
}

// Gate is a compiled egress policy. It is safe for concurrent use. The
// zero value, and a nil *Gate, deny everything.
type Gate struct {
	block *blockTable
	tasks map[string]*allowlist
	local LocalAddrs // nil: loopback and unspecified only
	creds []*credential
}

// Compile validates cfg and builds the gate's lookup structures once.
// Every malformed entry is reported, each error naming its task and entry;
// so is an allowlist entry that can reach only always-blocked destinations,
// and one that CheckReach refuses (a localhost name, a catch-all range,
// loopback without a port).
func Compile(cfg Config) (*Gate, error) {
	g := &Gate{block: &blockTable{names: maps.Clone(floor.names)}, tasks: make(map[string]*allowlist), local: cfg.Local}
	if g.local == nil {
		g.local = HostAddrs()
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
			if _, ok := g.block.names[e.name]; !ok {
				g.block.names[e.name] = b
			}
		case kindPrefix:
			g.block.addrs.insert(e.prefix, b)
		}
	}
	for _, task := range slices.Sorted(maps.Keys(cfg.TaskAllowlist)) {
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
			if re := reachProblem(e); re != nil {
				errs = append(errs, fmt.Errorf("egress: task %q: allowlist entry %q: %s (%s)", task, s, re.Problem, re.Hint))
				continue
			}
			al.add(e)
		}
		errs = append(errs, al.addEntries(task, cfg.TaskAllowlist[task], cfg.Entries[task])...)
		g.tasks[task] = al
	}
	for _, task := range slices.Sorted(maps.Keys(cfg.Entries)) {
		if _, ok := cfg.TaskAllowlist[task]; !ok {
			errs = append(errs, fmt.Errorf("egress: task %q: entry options for a task with no allowlist", task))
		}
	}
	for _, cc := range cfg.Credentials {
		c, err := compileCredential(cc)
		if err != nil {
			errs = append(errs, fmt.Errorf("egress: credential %q: %w", cc.Name, err))
			continue
		}
		g.creds = append(g.creds, c)
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
	pathHostOwn
	pathSpecialUse
)

// verdict is a decision before its reason is written.
type verdict struct {
	path  path
	rule  *rule
	block blockRule
	view  netip.Addr // the address that was blocked, non-public or the host's own
	class nonPublic  // pathNonPublic, pathHostOwn: why view is not public
	cause string     // pathMalformed
	al    *allowlist
}

// decide runs the gate on *t without writing a reason: it fills v, which
// must be zero, and normalises *t when it was built by hand. (Pointers,
// not values: a verdict is large, and a decision is cheap enough that
// copying it shows.)
func (g *Gate) decide(task string, t *Target, v *verdict) {
	if g == nil || g.block == nil || g.tasks == nil {
		v.path = pathNoGate
		return
	}
	if t.Name != "" && !isCanonicalName(t.Name) {
		// A Target built by hand rather than by ParseTarget: normalise it,
		// so that "METADATA.google.internal." or "169.254.169.254" written
		// as a name cannot slip past the checks below.
		nt, err := ParseTarget(t.Name, t.Port)
		if err != nil {
			v.path, v.cause = pathMalformed, causeOf(err)
			return
		}
		*t = nt
	}
	if t.Name != "" {
		if b, ok := g.block.name(t.Name); ok {
			v.path, v.block = pathBlockedName, b
			return
		}
		if why, _ := specialUse(t.Name); why != "" {
			v.path = pathSpecialUse
			return
		}
		al := g.tasks[task]
		switch {
		case al == nil:
			v.path = pathNoTask
		case v.setRule(al.matchName(t.Name, t.Port), al):
		default:
			v.path = pathDefault
		}
		return
	}
	if !t.Addr.IsValid() {
		v.path = pathEmpty
		return
	}
	if t.Addr.Zone() != "" {
		v.path, v.cause = pathMalformed, ErrZone.Error()
		return
	}
	t.Addr = t.Addr.Unmap()
	views := viewsOf(t.Addr) // once, for the floor and for classify
	if b, view, ok := g.block.addrViews(&views); ok {
		v.path, v.block, v.view = pathBlockedAddr, b, view
		return
	}
	al := g.tasks[task]
	if al == nil {
		v.path = pathNoTask
		return
	}
	if class, own := g.hostOwn(&views); own {
		// Only an IP or CIDR entry naming the port reaches the host's own
		// addresses; any other entry that matches is named in the refusal.
		if v.setRule(al.matchPrefixPort(t.Addr, t.Port), al) {
			return
		}
		r := al.matchPrefix(t.Addr, t.Port)
		if r == nil {
			r = al.wildcard.match(t.Port)
		}
		if r == nil {
			v.path = pathDefault
			return
		}
		v.path, v.rule, v.view, v.class = pathHostOwn, r, t.Addr, class
		return
	}
	if v.setRule(al.matchPrefix(t.Addr, t.Port), al) {
		return
	}
	r := al.wildcard.match(t.Port)
	if r == nil {
		v.path = pathDefault
		return
	}
	if class, public := classifyViews(&views); !public {
		v.path, v.rule, v.view, v.class = pathNonPublic, r, t.Addr, class
		return
	}
	v.setRule(r, al)
}

// setRule records that r, of al, allows the target, when r is not nil.
func (v *verdict) setRule(r *rule, al *allowlist) bool {
	if r == nil {
		return false
	}
	v.path, v.rule, v.al = pathAllowed, r, al
	return true
}

// decision is v's decision, with its reason.
func (v verdict) decision(task string, t Target) decision.Decision {
	d := decision.Decision{Gate: decision.GateEgress, Reason: v.reason(task, t)}
	switch v.path {
	case pathBlockedName, pathBlockedAddr:
		d.Rule = v.block.entry
	case pathAllowed:
		d.Verdict, d.Rule = decision.Allow, v.rule.entry
	case pathNonPublic, pathHostOwn:
		d.Rule = v.rule.entry
	}
	return d
}

// reason writes the fixed sentence of v's path.
func (v verdict) reason(task string, t Target) string {
	switch v.path {
	case pathEmpty:
		return reasonEmpty(task)
	case pathMalformed:
		return reasonMalformed(task, t.Host(), v.cause)
	case pathBlockedName:
		return reasonBlockedName(task, t, v.block)
	case pathBlockedAddr:
		return reasonBlockedAddr(task, t, v.view, v.block)
	case pathNoTask:
		return reasonNoTask(task, t)
	case pathDefault:
		return reasonDefault(task, t)
	case pathAllowed:
		return reasonAllowed(task, t, v.rule)
	case pathNonPublic:
		return reasonNonPublic(task, t, v.view, v.class, v.rule)
	case pathHostOwn:
		return reasonHostOwn(task, t, v.view, v.class, v.rule, false)
	case pathSpecialUse:
		return reasonSpecialUse(task, t)
	}
	return reasonNoGate
}

// Check is the static decision for task on t: always-blocked first, then
// the task's allowlist, then deny. For a name, Allow means the name may be
// resolved; the caller must then decide on the addresses with CheckResolved.
//
// Rule is the matched allowlist entry as written in the policy (or the
// always-blocked entry for a block); the reason names task, host and
// entry. An IP literal reached only through "*" must be public.
func (g *Gate) Check(task string, t Target) decision.Decision {
	var v verdict
	g.decide(task, &t, &v)
	return v.decision(task, t)
}

// CheckHost parses host as ParseTarget does and checks it; a malformed
// host is denied with a reason saying why.
func (g *Gate) CheckHost(task, host string, port uint16) (decision.Decision, Target) {
	t, err := ParseTarget(host, port)
	return g.checkParsed(task, host, t, err)
}

// CheckHostPort splits and parses hostport as SplitHostPort does and
// checks it; a malformed host is denied with a reason saying why.
func (g *Gate) CheckHostPort(task, hostport string, defaultPort uint16) (decision.Decision, Target) {
	t, err := SplitHostPort(hostport, defaultPort)
	return g.checkParsed(task, hostport, t, err)
}

// checkParsed checks t, what raw parsed to; a raw that did not parse
// (err) is denied with a reason saying why.
func (g *Gate) checkParsed(task, raw string, t Target, err error) (decision.Decision, Target) {
	if err != nil {
		return verdict{path: pathMalformed, cause: causeOf(err)}.decision(task, Target{Name: raw}), Target{}
	}
	var v verdict
	nt := t
	g.decide(task, &nt, &v)
	return v.decision(task, nt), t
}

// CheckResolved decides on a name after one resolution: it denies the name
// when any address is always blocked, and otherwise returns the addresses
// that may be dialled, in the resolver's order.
//
// An address of the host itself (loopback, unspecified, an address of its
// interfaces) is kept only when an IP or CIDR entry of the task naming the
// port covers it: a name's entry never reaches one. Another non-public
// address (private, CGNAT, unique-local, ...) is kept only when the name
// matched an exact-host entry or an IP/CIDR entry of the task covers it: a
// wildcard entry never reaches one. Other addresses are dropped; when none
// remains the name is denied. The
// returned slice is new (zones removed); the caller must dial only these
// addresses and must not resolve the name again. For an IP-literal target
// addrs is ignored and the result is the literal itself.
func (g *Gate) CheckResolved(task string, t Target, addrs []netip.Addr) (decision.Decision, []netip.Addr) {
	var v verdict
	nt := t
	g.decide(task, &nt, &v)
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
	var refusedClass nonPublic
	for _, a := range addrs {
		a = a.WithZone("")
		if !a.IsValid() {
			if refusedClass.class == "" {
				refused, refusedClass = a, nonPublic{class: "unusable"}
			}
			continue
		}
		u := a.Unmap()
		av := viewsOf(u)
		if class, own := g.hostOwn(&av); own {
			if v.al.matchPrefixPort(u, nt.Port) != nil {
				out = append(out, a)
			} else if refusedClass.class == "" {
				refused, refusedClass = a, class
			}
			continue
		}
		if v.rule.kind == kindExact || v.al.matchPrefix(u, nt.Port) != nil {
			out = append(out, a)
			continue
		}
		class, public := classifyViews(&av)
		if public {
			out = append(out, a)
			continue
		}
		if refusedClass.class == "" {
			refused, refusedClass = a, class
		}
	}
	if len(out) == 0 {
		d.Rule = v.rule.entry
		if refusedClass.hostOwn {
			d.Reason = reasonHostOwn(task, nt, refused, refusedClass, v.rule, true)
		} else {
			d.Reason = reasonDNSNonPublic(task, nt, refused, refusedClass, v.rule)
		}
		return d, nil
	}
	if dropped := len(addrs) - len(out); dropped > 0 {
		d.Verdict, d.Rule = decision.Allow, v.rule.entry
		d.Reason = reasonAllowedSome(task, nt, v.rule, dropped, len(addrs))
		return d, out
	}
	// Every address kept: the reason is Check's.
	return v.decision(task, nt), out
}
