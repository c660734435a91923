package egress

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// rule is an allowlist entry as the gate matches it.
type rule struct {
	entry string // as written in the policy
	kind  entryKind
	port  uint16 // 0: the entry names no port
}

// portSet holds the entries for one name or prefix: the one without a
// port, and those with one.
type portSet struct {
	anyPort *rule
	ports   map[uint16]*rule
}

func (p *portSet) add(port uint16, r *rule) {
	if port == 0 {
		if p.anyPort == nil {
			p.anyPort = r
		}
		return
	}
	if p.ports == nil {
		p.ports = make(map[uint16]*rule)
	}
	if _, ok := p.ports[port]; !ok {
		p.ports[port] = r
	}
}

// match prefers an entry naming the port over one without a port.
func (p *portSet) match(port uint16) *rule {
	if p == nil {
		return nil
	}
	if port != 0 && p.ports != nil {
		if r := p.ports[port]; r != nil {
			return r
		}
	}
	return p.anyPort
}

// allowlist is one task's compiled allowlist. Exact names and wildcard
// apexes are hash maps, so a name costs at most one probe per label;
// addresses use a prefix table (one probe per prefix length in use).
// Nothing scans the entries.
type allowlist struct {
	exact    map[string]*portSet
	suffix   map[string]*portSet
	wildcard portSet
	prefixes prefixTable[*portSet]
	entries  map[string]*Entry // the options of entries that have any, by entry as written
}

// addEntries compiles the options of task's entries, each of which must
// be one of list.
func (al *allowlist) addEntries(task string, list []string, opts map[string]EntryConfig) []error {
	var errs []error
	for _, raw := range slices.Sorted(maps.Keys(opts)) {
		if !slices.Contains(list, raw) {
			errs = append(errs, fmt.Errorf("egress: task %q: options for %q, which is not in its allowlist", task, raw))
			continue
		}
		e, err := compileEntry(task, raw, opts[raw])
		if err != nil {
			errs = append(errs, fmt.Errorf("egress: task %q: allowlist entry %q: %w", task, raw, err))
			continue
		}
		if al.entries == nil {
			al.entries = map[string]*Entry{}
		}
		al.entries[raw] = e
	}
	return errs
}

func (al *allowlist) add(e entry) {
	r := &rule{entry: e.raw, kind: e.kind, port: e.port}
	set := func(m *map[string]*portSet, k string) {
		if *m == nil {
			*m = map[string]*portSet{}
		}
		if (*m)[k] == nil {
			(*m)[k] = &portSet{}
		}
		(*m)[k].add(e.port, r)
	}
	switch e.kind {
	case kindExact:
		set(&al.exact, e.name)
	case kindSuffix:
		set(&al.suffix, e.name)
	case kindAny:
		al.wildcard.add(e.port, r)
	case kindPrefix:
		p := e.prefix.Masked()
		ps, ok := al.prefixes.get(p.Addr(), p.Bits())
		if !ok {
			ps = &portSet{}
			al.prefixes.insert(p, ps)
		}
		ps.add(e.port, r)
	}
}

// matchName returns the entry that allows name on port: the exact name,
// then "*.suffix" from the longest suffix, then "*".
func (al *allowlist) matchName(name string, port uint16) *rule {
	if ps, ok := al.exact[name]; ok {
		if r := ps.match(port); r != nil {
			return r
		}
	}
	if len(al.suffix) > 0 {
		for s := name; ; {
			i := strings.IndexByte(s, '.')
			if i < 0 {
				break
			}
			s = s[i+1:]
			if ps, ok := al.suffix[s]; ok {
				if r := ps.match(port); r != nil {
					return r
				}
			}
		}
	}
	return al.wildcard.match(port)
}

// matchPrefix returns the IP or CIDR entry that covers a on port, from the
// longest prefix.
func (al *allowlist) matchPrefix(a netip.Addr, port uint16) *rule {
	t := &al.prefixes
	if t.empty() || !a.IsValid() {
		return nil
	}
	for _, l := range t.lens[familyIndex(a)] {
		if ps, ok := t.get(a, l); ok {
			if r := ps.match(port); r != nil {
				return r
			}
		}
	}
	return nil
}

// matchPrefixPort returns the IP or CIDR entry naming port that covers a,
// from the longest prefix: the only kind of entry that reaches the host's
// own addresses.
func (al *allowlist) matchPrefixPort(a netip.Addr, port uint16) *rule {
	t := &al.prefixes
	if port == 0 || t.empty() || !a.IsValid() {
		return nil
	}
	for _, l := range t.lens[familyIndex(a)] {
		if ps, ok := t.get(a, l); ok && ps.ports != nil {
			if r := ps.ports[port]; r != nil {
				return r
			}
		}
	}
	return nil
}
