// Package egress is airlock's egress gate: it decides, per task, which
// destinations a sandbox may reach through the egress proxy.
//
// A decision takes three steps, in order:
//
//  1. Always blocked. The built-in floor (cloud metadata names such as
//     metadata.google.internal and their subdomains; 169.254.0.0/16,
//     fe80::/10, fd00:ec2::/32, fd20:ce::254, 100.100.100.200, 192.0.0.192,
//     168.63.129.16) plus the policy's alwaysBlocked entries. No allowlist
//     entry can open them. Addresses are checked in every form: an IPv6
//     address that embeds an IPv4 one (mapped, compatible, translated,
//     NAT64, 6to4, Teredo, ISATAP) is checked as that IPv4 address too.
//  2. The task's allowlist: an exact host, "*.suffix" (subdomains only, not
//     the apex), "*" (any public host), an IP address or a CIDR, each
//     optionally with ":port". Exact hosts win over wildcards, the longest
//     wildcard suffix over shorter ones, an entry naming the port over one
//     without. A wildcard never reaches a non-public address (loopback,
//     private, CGNAT, unique-local, multicast, reserved, ...); an exact host
//     or an IP/CIDR entry covering the address does. The host's own
//     addresses (loopback, unspecified, its interfaces', see LocalAddrs)
//     are reached only through an IP/CIDR entry that names the port, never
//     through a name; catch-all ranges ("0.0.0.0/0") and special-use names
//     are refused by Compile (CheckReach). Special-use names (localhost,
//     .invalid, .onion) are refused by every decision too, under "*".
//  3. Deny by default.
//
// docs/egress.md is the contract.
//
// An entry may carry options (EntryConfig): inspection, with rules on the
// requests to it that Entry.CheckRequest applies (deny rules first, then
// allow rules, then deny once there is a rule), and the protocol a tunnel
// to it must carry. Credentials (CredentialConfig) say which requests the
// proxy adds which credential to; their values are never the gate's.
//
// A name is matched by name entries only: an IP or CIDR entry never lets a
// name through, so a name that is not allowlisted by name is refused
// before any lookup, and no DNS query leaves for it.
//
// Hosts are normalised first by ParseTarget or SplitHostPort: names are
// lower-cased, lose one trailing dot and become Punycode under UTS #46;
// IPv4 literals are read in every inet_aton spelling (2852039166,
// 0xA9FEA9FE, 0251.0376.0251.0376, 169.254.43518, ...); zone identifiers
// and malformed names are refused with a reason.
//
// A name that Check allows may be resolved; the proxy then resolves it
// once and passes every address to CheckResolved, which refuses the name
// if any address is always blocked and returns the addresses it may dial.
//
// Every decision is a decision.Decision whose zero value is a denial, with
// a fixed reason naming the task, the host and the entry that decided.
// The gate is compiled once; a decision probes hash maps (one per label of
// the name, one per prefix length in use) and never scans the allowlist.
package egress
