package egress

// nameMap maps normalised names to values, with a filter on key lengths:
// a walk over a name's parent domains skips the hash probe for every
// suffix whose length no key has, which is most of them.
type nameMap[V any] struct {
	m    map[string]V
	lens [maxNameLen + 1]bool
}

// setIfAbsent stores v under k unless k is already present.
func (n *nameMap[V]) setIfAbsent(k string, v V) {
	if n.m == nil {
		n.m = make(map[string]V)
	}
	if _, ok := n.m[k]; ok {
		return
	}
	n.m[k] = v
	if len(k) <= maxNameLen {
		n.lens[len(k)] = true
	}
}

func (n *nameMap[V]) get(k string) (V, bool) {
	if len(k) > maxNameLen || !n.lens[len(k)] {
		var zero V
		return zero, false
	}
	v, ok := n.m[k]
	return v, ok
}

func (n *nameMap[V]) len() int { return len(n.m) }
