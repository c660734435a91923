package authoring

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/publicsuffix"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/strict"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

// maxHosts bounds the entries Suggest proposes for one task, and the
// paths of one suggested request rule.
const maxHosts = 256

// protocolInspected is the audit records' protocol of a request inside
// an inspected tunnel (proxy.ProtocolInspected).
const protocolInspected = "inspected"

// maxRecordedPath is the length at which the proxy cuts a request's path
// in its record: a path that long may be cut.
const maxRecordedPath = 256

// floorWhy is why a floor destination is never proposed.
const floorWhy = "the built-in floor blocks it (cloud metadata, link-local): no policy can allow it, and suggest never proposes it"

type hostRefusal struct {
	t     egress.Target
	addrs []netip.Addr
	rec   Record
}

type requestKey struct{ task, entry, method string }

type requestRefusal struct {
	example string // "METHOD URL"
	path    string // the canonical path, as a rule's glob matches it
	x       policy.EntryExample
	rec     Record
}

// readEgress reads an egress refusal: a destination, a request on an
// inspected entry, or a budget reached.
func (s *suggester) readEgress(ev audit.Event) {
	c := ev.Context
	rec := recordOf(ev)
	if c.Event == audit.EventEgressBudgetReached {
		s.budgets.add(budgetKey{name: c.Details["budget"], host: c.Host, cap: c.Details["cap"]}, ev)
		return
	}
	dest := c.Host
	if c.Port != 0 {
		dest = net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
	}
	subject := fmt.Sprintf("task %s: %s", quote(c.Task), termtext.Escape(dest))
	if c.Protocol == protocolInspected {
		subject += " " + termtext.Escape(c.Details["method"]+" "+c.Details["path"])
	}
	why := ""
	switch {
	case c.Protocol == "socks4" || c.Protocol == "unknown":
		why = "the proxy refused the connection before any egress decision: " + termtext.Clip(ev.Reason, 256)
	case c.Details["budget"] != "":
		why = "refused by budget " + quote(c.Details["budget"]) + ", whose cap was reached (see the budget's own record)"
	case c.Task == policy.NoTask:
		why = "the session had no task, so it may reach nothing: start it with --task"
	case !strict.Name(c.Task):
		why = "the task's name is not one a policy can have"
	case c.Host == "":
		why = "the record names no destination: the proxy could not read one"
	case egress.IsAlwaysBlockedName(c.Host):
		why = floorWhy
	}
	addrs := make([]netip.Addr, 0, len(c.Addresses))
	for _, a := range c.Addresses {
		if ip, err := netip.ParseAddr(a); err == nil {
			addrs = append(addrs, ip)
			if egress.IsAlwaysBlocked(ip) && why == "" {
				why = floorWhy + " (the name resolved to " + ip.String() + ")"
			}
		}
	}
	t, err := egress.ParseTarget(c.Host, c.Port)
	if err != nil && why == "" {
		why = "not a destination the gate can allow: " + termtext.Escape(err.Error())
	}
	if why != "" {
		s.leave(subject, why, rec)
		return
	}
	if c.Protocol == protocolInspected {
		s.readRequest(ev, t, subject)
		return
	}
	switch d := s.d.resolved(c.Task, c.Host, c.Port, addrs); {
	case d.Allowed():
		s.leave(subject, "the gate allows it now (entry "+quote(d.Rule)+"); the proxy refused it for what it carried: "+
			termtext.Clip(ev.Reason, 256), rec)
	case s.pol.Egress != nil && slices.Contains(s.pol.Egress.AlwaysBlocked, d.Rule):
		s.leave(subject, "the policy's alwaysBlocked entry "+quote(d.Rule)+" blocks it: suggest never removes one", rec)
	default:
		s.hosts.add(c.Task, hostRefusal{t: t, addrs: addrs, rec: rec})
	}
}

// readRequest reads the refusal of a request on an inspected entry.
func (s *suggester) readRequest(ev audit.Event, t egress.Target, subject string) {
	c := ev.Context
	rec := recordOf(ev)
	method, raw, entry := c.Details["method"], c.Details["path"], c.Details["entry"]
	escaped, query, _ := strings.Cut(raw, "?")
	canon, err := egress.CanonicalPath(escaped)
	why := ""
	switch {
	case len(raw) >= maxRecordedPath:
		why = "the record may have shortened the path, so it is not known exactly"
	case err != nil:
		why = "no rule can name its path: " + err.Error()
	case strings.Contains(canon, "*"):
		why = `its path holds "*", which a path glob cannot name exactly`
	case !readable(canon) || !readable(query):
		why = "its path holds control or invisible characters, or bytes that are not UTF-8"
	}
	x, xerr := policy.ParseEntryExample(method + " " + requestURL(t, escaped, query))
	if xerr != nil && why == "" {
		why = "no rule can name it: " + termtext.Escape(xerr.Error())
	}
	if why != "" {
		s.leave(subject, why, rec)
		return
	}
	host, req := s.d.request(c.Task, x)
	switch e := s.d.eg.Entry(c.Task, host.Rule); {
	case !host.Allowed():
		s.leave(subject, "the gate refuses its destination now: "+host.Why(), rec)
	case host.Rule != entry:
		s.leave(subject, "its destination is now allowed through entry "+quote(host.Rule)+", not "+quote(entry), rec)
	case !e.Inspected():
		s.leave(subject, "entry "+quote(entry)+" is not inspected now: what it carries is not decided request by request", rec)
	case !e.HasRules():
		s.leave(subject, "entry "+quote(entry)+" has no rules, so it allows every request; this one was refused for what it asked: "+
			termtext.Clip(ev.Reason, 256), rec)
	case req.Allowed():
		s.leave(subject, "the policy allows it now", rec)
	case req.Rule != "":
		s.leave(subject, "refused by rule "+quote(req.Rule)+" of entry "+quote(entry)+": "+req.Why()+"; suggest never removes a rule", rec)
	default:
		s.requests.add(requestKey{c.Task, entry, method}, requestRefusal{example: method + " " + x.URL.String(), path: canon, x: x, rec: rec})
	}
}

// requestURL is the URL of a request to t as an example writes it:
// https, but http on port 80, the port when it is not the scheme's.
func requestURL(t egress.Target, path, query string) string {
	scheme, port := "https", t.Port
	switch port {
	case 80:
		scheme, port = "http", 0
	case 443:
		port = 0
	}
	u := scheme + "://" + egress.Target{Name: t.Name, Addr: t.Addr, Port: port}.String() + path
	if query != "" {
		u += "?" + query
	}
	return u
}

// hostSuggestions proposes, for each task, an entry of each exact
// destination refused; several sibling names (at least minShared under
// one parent that is not a public suffix, on one port, none resolved to
// an address that is not public) become one "*.parent" entry, which says
// so.
func (s *suggester) hostSuggestions() []*Suggestion {
	var out []*Suggestion
	for _, task := range s.hosts.keys {
		var dests groups[string, hostRefusal]
		for _, h := range s.hosts.m[task] {
			dests.add(h.t.String(), h)
		}
		by := dests.m
		var siblings groups[string, string] // by parent
		for _, k := range dests.keys {
			t := by[k][0].t
			if t.Name == "" || slices.ContainsFunc(by[k], func(h hostRefusal) bool { return !allPublic(h.addrs) }) {
				continue
			}
			_, parent, ok := strings.Cut(t.Name, ".")
			if !ok || !strings.Contains(parent, ".") {
				continue
			}
			if ps, _ := publicsuffix.PublicSuffix(parent); ps == parent {
				continue
			}
			siblings.add(egress.Target{Name: parent, Port: t.Port}.String(), k)
		}
		wild := map[string]bool{}
		for _, p := range siblings.keys {
			if sib := siblings.m[p]; len(sib) >= minShared {
				var hs []hostRefusal
				for _, k := range sib {
					hs = append(hs, by[k]...)
					wild[k] = true
				}
				out = append(out, s.hostSuggestion(task, "*."+p, hs, sib, p))
			}
		}
		n := 0
		for _, k := range dests.keys {
			if wild[k] {
				continue
			}
			if n++; n > maxHosts {
				s.leave(fmt.Sprintf("task %s: %s", quote(task), k), fmt.Sprintf("more than %d destinations were refused: write the entries by hand", maxHosts), recordsOf(by[k])...)
				continue
			}
			out = append(out, s.hostSuggestion(task, k, by[k], nil, ""))
		}
	}
	return out
}

func allPublic(addrs []netip.Addr) bool {
	for _, a := range addrs {
		if _, public := egress.AddrClass(a); !public {
			return false
		}
	}
	return true
}

func recordsOf(hs []hostRefusal) Records {
	recs := make(Records, len(hs))
	for i, h := range hs {
		recs[i] = h.rec
	}
	sortRecords(recs)
	return recs
}

// hostSuggestion is the allowlist entry host for the refusals hs of
// task: an exact destination, or, with siblings, a wildcard over them
// whose apex (parent) it does not reach.
func (s *suggester) hostSuggestion(task, host string, hs []hostRefusal, siblings []string, parent string) *Suggestion {
	e := &policy.AllowEntry{Host: host, Examples: &policy.EntryExamples{Match: []string{host}}}
	c := &Suggestion{Kind: "host", Field: strict.Field("egress.taskAllowlist", task), Entry: e, Records: recordsOf(hs),
		Summary: fmt.Sprintf("task %s: allow %s", quote(task), host)}
	if siblings != nil {
		c.Kind = "wildcard"
		e.Examples = &policy.EntryExamples{Match: siblings[:min(len(siblings), maxListed)], NotMatch: []string{parent}}
		c.Summary += fmt.Sprintf(" (%d sibling names were refused)", len(siblings))
		c.Risks = append(c.Risks, fmt.Sprintf("a wildcard: every name under %s (not %[1]s itself), from %d refused siblings (%s); it reaches public addresses only",
			parent, len(siblings), strings.Join(siblings[:min(len(siblings), maxListed)], ", ")))
	} else {
		c.Risks = append(c.Risks, addressRisks(hs)...)
	}
	if s.pol.Egress == nil || s.pol.Egress.TaskAllowlist[task] == nil {
		c.Risks = append(c.Risks, "a new task: the policy had no allowlist for "+quote(task))
	}
	c.apply = func(d *document, _ *policy.Loaded) error {
		al, err := d.path("egress", "taskAllowlist")
		if err != nil {
			return err
		}
		return appendTo(al, task, e, c)
	}
	for _, h := range hs {
		c.checks = append(c.checks, func(_ *policy.Loaded, d *decider) string {
			if dec := d.resolved(task, h.t.Host(), h.t.Port, h.addrs); !dec.Allowed() {
				return dec.Why()
			}
			return ""
		})
	}
	return c
}

// addressRisks notes the addresses that are not public among what the
// refusals hs were for: an IP destination, or what a name resolved to.
func addressRisks(hs []hostRefusal) []string {
	var risks []string
	seen := map[netip.Addr]bool{}
	for _, h := range hs {
		addrs := h.addrs
		what := "the name resolved to "
		if h.t.IsIP() {
			addrs, what = []netip.Addr{h.t.Addr}, "the address "
		}
		for _, a := range addrs {
			if class, public := egress.AddrClass(a); !public && !seen[a] {
				seen[a] = true
				risks = append(risks, fmt.Sprintf("%s%s is not public: %s", what, a, class))
			}
		}
	}
	return risks
}

// requestSuggestions proposes, for each inspected entry and method, an
// allow rule of the exact paths refused.
func (s *suggester) requestSuggestions() []*Suggestion {
	var out []*Suggestion
	for _, k := range s.requests.keys {
		var paths, examples []string
		var recs Records
		var checks []requestRefusal
		for _, r := range s.requests.m[k] {
			recs = append(recs, r.rec)
			checks = append(checks, r)
			if slices.Contains(paths, r.path) {
				continue
			}
			if len(paths) == maxHosts {
				s.leave(fmt.Sprintf("task %s: %s", quote(k.task), r.example), fmt.Sprintf("more than %d paths were refused: write the rule by hand", maxHosts), r.rec)
				continue
			}
			paths = append(paths, r.path)
			if len(examples) < maxListed {
				examples = append(examples, r.example)
			}
		}
		sortRecords(recs)
		rule := &policy.HTTPRule{Methods: []string{k.method}, Paths: paths}
		c := &Suggestion{Kind: "request", Request: rule, Records: recs,
			Field:   strict.Index(strict.Field("egress.taskAllowlist", k.task), 0) + ".rules",
			Summary: fmt.Sprintf("task %s: entry %s: allow %s %s", quote(k.task), k.entry, k.method, strings.Join(paths, " "))}
		if !slices.Contains([]string{"GET", "HEAD", "OPTIONS"}, k.method) {
			c.Risks = append(c.Risks, "a method that changes what the server holds: "+k.method)
		}
		if cred := s.d.credential(k.task, checks[0].x); cred != "" {
			c.Risks = append(c.Risks, fmt.Sprintf("a credentialed host: the proxy adds credential %s to these requests, so %s acts with its authority", quote(cred), k.method))
		}
		c.apply = func(d *document, cur *policy.Loaded) error {
			i, entry, err := findEntry(d, cur, k.task, k.entry)
			if err != nil {
				return err
			}
			c.Field = strict.Index(strict.Field("egress.taskAllowlist", k.task), i) + ".rules"
			var taken []string
			for _, r := range cur.Egress.TaskAllowlist[k.task][i].Rules {
				taken = append(taken, r.Name)
			}
			rule.Name = uniqueName("suggested-"+strings.ToLower(k.method), taken)
			if err := appendTo(entry, "rules", rule, c); err != nil {
				return err
			}
			ex, err := ensure(entry, "examples", yaml.MappingNode)
			if err != nil {
				return err
			}
			match, err := ensure(ex, "match", yaml.SequenceNode)
			if err != nil {
				return err
			}
			for _, x := range examples {
				match.Content = append(match.Content, strNode(x))
			}
			return nil
		}
		for _, r := range checks {
			c.checks = append(c.checks, func(_ *policy.Loaded, d *decider) string {
				host, req := d.request(k.task, r.x)
				if host.Rule != k.entry || !req.Allowed() {
					return req.Why()
				}
				return ""
			})
		}
		out = append(out, c)
	}
	return out
}

// findEntry finds task's allowlist entry written as host in d: its index
// and its object (an inspected entry is always one).
func findEntry(d *document, cur *policy.Loaded, task, host string) (int, *yaml.Node, error) {
	if cur.Egress == nil {
		return 0, nil, fmt.Errorf("the policy has no egress section")
	}
	i := slices.IndexFunc(cur.Egress.TaskAllowlist[task], func(e policy.AllowEntry) bool { return e.Host == host })
	al, err := d.path("egress", "taskAllowlist")
	if err != nil {
		return 0, nil, err
	}
	list := get(al, task)
	if i < 0 || list == nil || list.Kind != yaml.SequenceNode || i >= len(list.Content) || list.Content[i].Kind != yaml.MappingNode {
		return 0, nil, fmt.Errorf("task %s has no inspected entry %s", quote(task), quote(host))
	}
	return i, list.Content[i], nil
}
