package authoring

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
)

// probeLabel names a host no entry names, under each wildcard.
const probeLabel = "airlock-diff-probe"

// publicProbes are public addresses, for what "*" reaches.
var publicProbes = []netip.Addr{netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("2606:4700:4700::1111")}

// destinations are the destinations that tell two allowlists apart: each
// name an entry gives, a name under each wildcard, a name and public
// addresses for "*", the first address of each range and the one past
// its end.
func destinations(entries []string) (names []string, addrs []netip.Addr) {
	add := func(a netip.Addr) {
		if a.IsValid() && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	for _, s := range entries {
		e, err := egress.ParseEntry(s)
		if err != nil {
			continue
		}
		switch e.Kind {
		case egress.EntryExact:
			names = append(names, e.Name)
		case egress.EntrySuffix:
			names = append(names, probeLabel+"."+e.Name)
		case egress.EntryAny:
			names = append(names, probeLabel+".example")
			for _, a := range publicProbes {
				add(a)
			}
		case egress.EntryPrefix:
			add(e.Prefix.Masked().Addr())
			add(lastAddr(e.Prefix).Next())
		}
	}
	return names, addrs
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	p = p.Masked()
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// ports are the ports entries name, and one they do not.
func ports(entries []string) []uint16 {
	var out []uint16
	for _, s := range entries {
		if e, err := egress.ParseEntry(s); err == nil && e.Port != 0 && !slices.Contains(out, e.Port) {
			out = append(out, e.Port)
		}
	}
	fresh := uint16(1)
	for slices.Contains(out, fresh) {
		fresh++
	}
	return append(out, fresh)
}

func hostsOf(entries []policy.AllowEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Host
	}
	return out
}

// diffEgress finds the destinations b's allowlists reach that a's do
// not, and on the entries both allow and b inspects, the requests b
// allows that a does not.
func diffEgress(c *changes, a, b *policy.Policy, da, db *decider) {
	if b.Egress == nil {
		return
	}
	for _, task := range sortedKeys(b.Egress.TaskAllowlist) {
		var oldEntries []policy.AllowEntry
		if a.Egress != nil {
			oldEntries = a.Egress.TaskAllowlist[task]
		}
		newEntries := b.Egress.TaskAllowlist[task]
		all := slices.Concat(hostsOf(oldEntries), hostsOf(newEntries))
		names, addrs := destinations(all)
		var targets []egress.Target
		for _, p := range ports(all) {
			for _, n := range names {
				targets = append(targets, egress.Target{Name: n, Port: p})
			}
			for _, ad := range addrs {
				targets = append(targets, egress.Target{Addr: ad, Port: p})
			}
		}
		reported, compared := map[string]bool{}, map[[2]string]bool{}
		for _, t := range targets {
			oa, _ := da.eg.CheckHostPort(task, t.String(), 0)
			ob, _ := db.eg.CheckHostPort(task, t.String(), 0)
			switch {
			case !ob.Allowed():
			case oa.Allowed():
				if pair := [2]string{oa.Rule, ob.Rule}; !compared[pair] {
					compared[pair] = true
					diffRequests(c, task, t, entryNamed(oldEntries, oa.Rule), entryNamed(newEntries, ob.Rule),
						da.eg.Entry(task, oa.Rule), db.eg.Entry(task, ob.Rule))
				}
			case !reported[ob.Rule]:
				reported[ob.Rule] = true
				e, _ := egress.ParseEntry(ob.Rule)
				class, public := egress.AddrClass(t.Addr)
				dest := t.String()
				if e.Port == 0 {
					dest = egress.Target{Name: t.Name, Addr: t.Addr}.String() + " on any port"
				}
				switch {
				case e.Kind == egress.EntrySuffix || e.Kind == egress.EntryAny:
					c.add(KindNewWildcard, "task "+task, ob.Rule, "entry %s reaches %s, and every name like it", quote(ob.Rule), dest)
				case t.IsIP() && !public:
					c.add(KindPrivateReach, "task "+task, ob.Rule, "entry %s reaches %s, %s", quote(ob.Rule), dest, class)
				default:
					c.add(KindNewHost, "task "+task, ob.Rule, "entry %s reaches %s", quote(ob.Rule), dest)
				}
			}
		}
	}
}

func entryNamed(entries []policy.AllowEntry, host string) policy.AllowEntry {
	for _, e := range entries {
		if e.Host == host {
			return e
		}
	}
	return policy.AllowEntry{}
}

// diffRequests compares the requests two entries allow to t, one of
// task's allowlist in each policy: a's entry ea (options oa) and b's eb
// (ob). Dropping inspection is one change; on an entry b inspects, each
// method and a path, query and headers from each rule of either is
// decided by both.
func diffRequests(c *changes, task string, t egress.Target, ea, eb policy.AllowEntry, oa, ob *egress.Entry) {
	switch {
	case !oa.Inspected():
		return // a carries every request unread
	case !ob.Inspected():
		if oa.HasRules() {
			c.add(KindInspectionDropped, "task "+task, eb.Host, "entry %s carries the requests to %s unread; %s's entry %s decides them by its rules",
				quote(eb.Host), t, c.a, quote(ea.Host))
		}
		return
	}
	rules := slices.Concat(ea.Rules, eb.Rules)
	paths := []string{"/", "/" + probeLabel}
	queries := []string{""}
	headers := []http.Header{nil}
	for _, r := range rules {
		for _, g := range r.Paths {
			// A segment no rule names where the glob has a star: a path the
			// glob matches and no exact path of the other policy does.
			paths = append(paths, strings.ReplaceAll(strings.ReplaceAll(g, "**", probeLabel+"/"+probeLabel), "*", probeLabel))
		}
		for _, p := range r.PathPrefixes {
			paths = append(paths, p, strings.TrimSuffix(p, "/")+"/"+probeLabel)
		}
		if len(r.Query) > 0 {
			q := url.Values{}
			for k, vs := range r.Query {
				q.Set(k, instance(vs))
			}
			queries = append(queries, q.Encode())
		}
		if len(r.Headers) > 0 {
			h := http.Header{}
			for k, vs := range r.Headers {
				h.Set(k, instance(vs))
			}
			headers = append(headers, h)
		}
	}
	allowedBefore := map[string]bool{}
	type widened struct{ method, path string }
	var found []widened
	for _, m := range egress.KnownMethods {
		for _, p := range paths {
			for _, q := range queries {
				for _, h := range headers {
					req := &egress.Request{Host: t.String(), Method: m, Path: (&url.URL{Path: p}).EscapedPath(), RawQuery: q, Header: h}
					before := oa.CheckRequest(req).Allowed()
					allowedBefore[m] = allowedBefore[m] || before
					if !before && ob.CheckRequest(req).Allowed() {
						found = append(found, widened{m, p})
					}
				}
			}
		}
	}
	for _, w := range found {
		if allowedBefore[w.method] {
			c.add(KindNewPath, "task "+task, eb.Host+"\x00"+w.method+"\x00"+w.path, "entry %s allows %s %s", quote(eb.Host), w.method, w.path)
		} else {
			c.add(KindNewMethod, "task "+task, eb.Host+"\x00"+w.method, "entry %s allows %s (e.g. %s)", quote(eb.Host), w.method, w.path)
		}
	}
}

// instance is a value a condition's list accepts.
func instance(vs []string) string {
	for _, v := range vs {
		if v != "*" {
			return v
		}
	}
	return "x"
}
