package egress

import (
	"net/netip"
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
// apexes are hash maps with a length filter, so a name costs at most one
// probe per label; addresses use a prefix table (one probe per prefix
// length in use). Nothing scans the entries.
type allowlist struct {
	exact    nameMap[*portSet]
	suffix   nameMap[*portSet]
	wildcard portSet
	prefixes prefixTable[*portSet]
}

func (al *allowlist) add(e entry) {
	r := &rule{entry: e.raw, kind: e.kind, port: e.port}
	set := func(m *nameMap[*portSet], k string) {
		m.setIfAbsent(k, &portSet{})
		ps, _ := m.get(k)
		ps.add(e.port, r)
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
	if ps, ok := al.exact.get(name); ok {
		if r := ps.match(port); r != nil {
			return r
		}
	}
	if al.suffix.len() > 0 {
		for s := name; ; {
			i := strings.IndexByte(s, '.')
			if i < 0 {
				break
			}
			s = s[i+1:]
			if ps, ok := al.suffix.get(s); ok {
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
	if t.empty() || !a.IsValid() || !t.mayHold(a) {
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
	if port == 0 || t.empty() || !a.IsValid() || !t.mayHold(a) {
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
