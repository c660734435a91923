package egress

import (
	"fmt"
	"net/netip"
	"strconv"
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
// ORIGIN is "built-in" or "policy".
const (
	reasonNoGate   = "egress gate is not compiled: deny by default"
	blockedSuffix  = " (cloud metadata and link-local destinations are never reachable)"
	wildcardPublic = " reaches public addresses only"
	allowedBy      = " allowed by allowlist entry "
	hostOwnOnly    = "): only an IP or CIDR entry naming the port reaches it, not entry "
)

// head starts a reason with `task "T": host "H"`.
func head(task string, t Target) string {
	return "task " + strconv.Quote(task) + `: host "` + t.String() + `"`
}

// text is why an address is not public: its class, and the embedded IPv4
// address the class belongs to.
func (c nonPublic) text() string {
	if c.embedded.IsValid() {
		return c.class + embeddedText + c.embedded.String()
	}
	return c.class
}

func reasonEmpty(task string) string {
	return "task " + strconv.Quote(task) + ": no destination host: deny"
}

func reasonMalformed(task, host, cause string) string {
	return fmt.Sprintf("task %q: host %q is malformed (%s): deny", task, clipped(host), cause)
}

func reasonBlockedName(task string, t Target, r blockRule) string {
	return fmt.Sprintf("%s is always blocked: the name matches %s entry %q%s", head(task, t), r.origin(), r.entry, blockedSuffix)
}

func reasonBlockedAddr(task string, t Target, view netip.Addr, r blockRule) string {
	return fmt.Sprintf("%s is always blocked: address %s matches %s entry %q%s", head(task, t), view, r.origin(), r.entry, blockedSuffix)
}

func reasonBlockedDNS(task string, t Target, view netip.Addr, r blockRule) string {
	return fmt.Sprintf("%s is always blocked: it resolves to %s, which matches %s entry %q%s", head(task, t), view, r.origin(), r.entry, blockedSuffix)
}

func reasonNoTask(task string, t Target) string {
	return head(task, t) + " denied by default: the task has no egress allowlist"
}

func reasonDefault(task string, t Target) string {
	return head(task, t) + " denied by default: not in the task's egress allowlist"
}

func reasonSpecialUse(task string, t Target) string {
	why, _ := specialUse(t.Name)
	return head(task, t) + " denied, whatever the allowlist: " + why
}

func reasonAllowed(task string, t Target, r *rule) string {
	return head(task, t) + allowedBy + strconv.Quote(r.entry)
}

func reasonAllowedSome(task string, t Target, r *rule, dropped, total int) string {
	return fmt.Sprintf("%s%s%q (%d of %d resolved addresses dropped: non-public or this host's own)", head(task, t), allowedBy, r.entry, dropped, total)
}

func reasonNonPublic(task string, t Target, a netip.Addr, class nonPublic, r *rule) string {
	return fmt.Sprintf("%s denied: address %s is %s and wildcard entry %q%s", head(task, t), a, class.text(), r.entry, wildcardPublic)
}

func reasonDNSNonPublic(task string, t Target, a netip.Addr, class nonPublic, r *rule) string {
	return fmt.Sprintf("%s denied: it resolves only to non-public addresses (%s is %s) and wildcard entry %q%s", head(task, t), a, class.text(), r.entry, wildcardPublic)
}

func reasonDNSEmpty(task string, t Target) string {
	return head(task, t) + " denied: it resolved to no address"
}

// reasonHostOwn writes the refusal of the host's own address a: a
// literal, or (resolved) one a name resolved to.
func reasonHostOwn(task string, t Target, a netip.Addr, class nonPublic, r *rule, resolved bool) string {
	what := fmt.Sprintf(" denied: address %s is this host's own (", a)
	if resolved {
		what = fmt.Sprintf(" denied: it resolves to %s, this host's own (", a)
	}
	return head(task, t) + what + class.text() + hostOwnOnly + strconv.Quote(r.entry)
}
