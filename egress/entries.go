package egress

import (
	"fmt"
	"net/netip"
)

// EntryKind is the shape of an allowlist entry, as ParseEntry returns it.
type EntryKind uint8

// The kinds of allowlist entries.
const (
	// EntryExact is one host name.
	EntryExact = EntryKind(kindExact)
	// EntrySuffix is "*.suffix": every name under the apex, not the apex.
	EntrySuffix = EntryKind(kindSuffix)
	// EntryAny is "*": any public host.
	EntryAny = EntryKind(kindAny)
	// EntryPrefix is an IP address (a /32 or /128) or a CIDR.
	EntryPrefix = EntryKind(kindPrefix)
)

// ParsedEntry is an allowlist or always-blocked entry's destination as the
// egress gate reads it, for the exporters that compile a policy into another system's rules
// (docs/export.md).
type ParsedEntry struct {
	// Kind is the entry's shape.
	Kind EntryKind
	// Name is the normalised name (EntryExact) or the apex (EntrySuffix).
	Name string
	// Prefix is the address or CIDR (EntryPrefix).
	Prefix netip.Prefix
	// Port is the one port the entry allows, 0 for any.
	Port uint16
}

// ParseEntry parses an allowlist entry as the gate does (see ValidateEntry).
func ParseEntry(s string) (ParsedEntry, error) {
	e, err := parseEntry(s)
	if err != nil {
		return ParsedEntry{}, fmt.Errorf("egress: allowlist entry %q: %w", s, err)
	}
	return ParsedEntry{Kind: EntryKind(e.kind), Name: e.name, Prefix: e.prefix, Port: e.port}, nil
}

// ParseBlockedEntry parses an alwaysBlocked entry as the gate does (see
// ValidateBlockedEntry): a name (EntryExact, which blocks its subdomains
// too) or an address or CIDR (EntryPrefix).
func ParseBlockedEntry(s string) (ParsedEntry, error) {
	e, err := parseBlockedEntry(s)
	if err != nil {
		return ParsedEntry{}, fmt.Errorf("egress: alwaysBlocked entry %q: %w", s, err)
	}
	return ParsedEntry{Kind: EntryKind(e.kind), Name: e.name, Prefix: e.prefix, Port: e.port}, nil
}

// FloorPrefixes returns the address prefixes of the built-in
// always-blocked floor (metadata and link-local destinations).
func FloorPrefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(builtinPrefixes))
	for _, p := range builtinPrefixes {
		out = append(out, netip.MustParsePrefix(p.prefix))
	}
	return out
}
