package egress

import (
	"net/netip"
	"strconv"
	"strings"
)

// Every decision carries one of these fixed sentences, filled with the
// task, the host (as "host:port"), and the entry that decided:
//
//	not compiled   egress gate is not compiled: deny by default
//	empty          task "T": no destination host: deny
//	malformed      task "T": host "H" is malformed (CAUSE): deny
//	blocked name   task "T": host "H" is always blocked: the name matches ORIGIN entry "E" (cloud metadata and link-local destinations are never reachable)
//	blocked addr   task "T": host "H" is always blocked: address A matches ORIGIN entry "E" (cloud metadata and link-local destinations are never reachable)
//	blocked answer task "T": host "H" is always blocked: it resolves to A, which matches ORIGIN entry "E" (cloud metadata and link-local destinations are never reachable)
//	no task        task "T": host "H" denied by default: the task has no egress allowlist
//	default        task "T": host "H" denied by default: not in the task's egress allowlist
//	special-use    task "T": host "H" denied, whatever the allowlist: WHY (localhost, .invalid, .onion)
//	allowed        task "T": host "H" allowed by allowlist entry "E"
//	allowed, some  task "T": host "H" allowed by allowlist entry "E" (N of M resolved addresses dropped: non-public or this host's own)
//	non-public     task "T": host "H" denied: address A is CLASS and wildcard entry "E" reaches public addresses only
//	host's own     task "T": host "H" denied: address A is this host's own (CLASS): only an IP or CIDR entry naming the port reaches it, not entry "E"
//	answer private task "T": host "H" denied: it resolves only to non-public addresses (A is CLASS) and wildcard entry "E" reaches public addresses only
//	answer own     task "T": host "H" denied: it resolves to A, this host's own (CLASS): only an IP or CIDR entry naming the port reaches it, not entry "E"
//	no answer      task "T": host "H" denied: it resolved to no address
//
// ORIGIN is "built-in" or "policy". Each reason is written into one
// strings.Builder grown once, so writing one costs one allocation; a
// decision that repeats one the gate took recently takes its reason from
// the gate's reason cache and allocates nothing.
const (
	reasonNoGate   = "egress gate is not compiled: deny by default"
	blockedSuffix  = " (cloud metadata and link-local destinations are never reachable)"
	wildcardPublic = " reaches public addresses only"
	allowedBy      = " allowed by allowlist entry "
	hostOwnOnly    = "): only an IP or CIDR entry naming the port reaches it, not entry "
)

// Reasons are written into a builder grown once to a bound on their
// length: headRoom covers `task "": host ":65535"` with an IPv6 address,
// addrRoom one more address; the rest is each reason's fixed text.
const (
	headRoom = 80
	addrRoom = 48
)

// quote writes s quoted as strconv.Quote would.
func quote(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			b.WriteString(strconv.Quote(s))
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

func writeAddr(b *strings.Builder, a netip.Addr) {
	if !a.IsValid() {
		b.WriteString("invalid IP")
		return
	}
	var buf [64]byte
	b.Write(a.AppendTo(buf[:0]))
}

// writeClass writes why an address is not public: its class, and the
// embedded IPv4 address the class belongs to.
func writeClass(b *strings.Builder, c nonPublic) {
	b.WriteString(c.class)
	if c.embedded.IsValid() {
		b.WriteString(embeddedText)
		writeAddr(b, c.embedded)
	}
}

// classRoom bounds what writeClass writes.
func classRoom(c nonPublic) int { return len(c.class) + len(embeddedText) + addrRoom }

func writeInt(b *strings.Builder, n int) {
	var buf [20]byte
	b.Write(strconv.AppendInt(buf[:0], int64(n), 10))
}

// head starts a reason with `task "T": host "H"` in a builder grown for
// the whole reason.
func head(b *strings.Builder, task string, t Target, more int) {
	b.Grow(len(task) + len(t.Name) + headRoom + more)
	b.WriteString("task ")
	quote(b, task)
	b.WriteString(": host \"")
	writeTarget(b, t)
	b.WriteByte('"')
}

func reasonEmpty(task string) string {
	var b strings.Builder
	b.Grow(len(task) + headRoom)
	b.WriteString("task ")
	quote(&b, task)
	b.WriteString(": no destination host: deny")
	return b.String()
}

func reasonMalformed(task, host, cause string) string {
	host = shownHost(host)
	var b strings.Builder
	b.Grow(len(task) + len(host) + len(cause) + headRoom)
	b.WriteString("task ")
	quote(&b, task)
	b.WriteString(": host ")
	quote(&b, host)
	b.WriteString(" is malformed (")
	b.WriteString(cause)
	b.WriteString("): deny")
	return b.String()
}

func reasonBlockedName(task string, t Target, r blockRule) string {
	var b strings.Builder
	head(&b, task, t, len(r.entry)+len(blockedSuffix)+64)
	b.WriteString(" is always blocked: the name matches ")
	b.WriteString(r.origin())
	b.WriteString(" entry ")
	quote(&b, r.entry)
	b.WriteString(blockedSuffix)
	return b.String()
}

func reasonBlockedAddr(task string, t Target, view netip.Addr, r blockRule) string {
	var b strings.Builder
	head(&b, task, t, len(r.entry)+len(blockedSuffix)+addrRoom+64)
	b.WriteString(" is always blocked: address ")
	writeAddr(&b, view)
	b.WriteString(" matches ")
	b.WriteString(r.origin())
	b.WriteString(" entry ")
	quote(&b, r.entry)
	b.WriteString(blockedSuffix)
	return b.String()
}

func reasonBlockedDNS(task string, t Target, view netip.Addr, r blockRule) string {
	var b strings.Builder
	head(&b, task, t, len(r.entry)+len(blockedSuffix)+addrRoom+80)
	b.WriteString(" is always blocked: it resolves to ")
	writeAddr(&b, view)
	b.WriteString(", which matches ")
	b.WriteString(r.origin())
	b.WriteString(" entry ")
	quote(&b, r.entry)
	b.WriteString(blockedSuffix)
	return b.String()
}

func reasonNoTask(task string, t Target) string {
	var b strings.Builder
	head(&b, task, t, 64)
	b.WriteString(" denied by default: the task has no egress allowlist")
	return b.String()
}

func reasonDefault(task string, t Target) string {
	var b strings.Builder
	head(&b, task, t, 64)
	b.WriteString(" denied by default: not in the task's egress allowlist")
	return b.String()
}

func reasonSpecialUse(task string, t Target) string {
	why, _ := specialUse(t.Name)
	var b strings.Builder
	head(&b, task, t, len(why)+32)
	b.WriteString(" denied, whatever the allowlist: ")
	b.WriteString(why)
	return b.String()
}

func reasonAllowed(task string, t Target, r *rule) string {
	var b strings.Builder
	head(&b, task, t, len(r.entry)+len(allowedBy)+2)
	b.WriteString(allowedBy)
	quote(&b, r.entry)
	return b.String()
}

func reasonAllowedSome(task string, t Target, r *rule, dropped, total int) string {
	var b strings.Builder
	head(&b, task, t, len(r.entry)+len(allowedBy)+96)
	b.WriteString(allowedBy)
	quote(&b, r.entry)
	b.WriteString(" (")
	writeInt(&b, dropped)
	b.WriteString(" of ")
	writeInt(&b, total)
	b.WriteString(" resolved addresses dropped: non-public or this host's own)")
	return b.String()
}

func reasonNonPublic(task string, t Target, a netip.Addr, class nonPublic, r *rule) string {
	var b strings.Builder
	head(&b, task, t, classRoom(class)+len(r.entry)+len(wildcardPublic)+addrRoom+48)
	b.WriteString(" denied: address ")
	writeAddr(&b, a)
	b.WriteString(" is ")
	writeClass(&b, class)
	b.WriteString(" and wildcard entry ")
	quote(&b, r.entry)
	b.WriteString(wildcardPublic)
	return b.String()
}

func reasonDNSNonPublic(task string, t Target, a netip.Addr, class nonPublic, r *rule) string {
	var b strings.Builder
	head(&b, task, t, classRoom(class)+len(r.entry)+len(wildcardPublic)+addrRoom+96)
	b.WriteString(" denied: it resolves only to non-public addresses (")
	writeAddr(&b, a)
	b.WriteString(" is ")
	writeClass(&b, class)
	b.WriteString(") and wildcard entry ")
	quote(&b, r.entry)
	b.WriteString(wildcardPublic)
	return b.String()
}

func reasonDNSEmpty(task string, t Target) string {
	var b strings.Builder
	head(&b, task, t, 40)
	b.WriteString(" denied: it resolved to no address")
	return b.String()
}

// reasonHostOwn writes the refusal of the host's own address a: a
// literal, or (resolved) one a name resolved to.
func reasonHostOwn(task string, t Target, a netip.Addr, class nonPublic, r *rule, resolved bool) string {
	var b strings.Builder
	head(&b, task, t, classRoom(class)+len(r.entry)+len(hostOwnOnly)+addrRoom+48)
	if resolved {
		b.WriteString(" denied: it resolves to ")
		writeAddr(&b, a)
		b.WriteString(", this host's own (")
	} else {
		b.WriteString(" denied: address ")
		writeAddr(&b, a)
		b.WriteString(" is this host's own (")
	}
	writeClass(&b, class)
	b.WriteString(hostOwnOnly)
	quote(&b, r.entry)
	return b.String()
}
