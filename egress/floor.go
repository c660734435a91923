package egress

import (
	"net/netip"
	"strings"
)

// builtinNames are cloud metadata service names that no policy can open.
// A name entry blocks the name and every name under it (a.b.metadata.goog
// too): the safer reading, since a metadata name has no legitimate
// subdomain. The address floor below is what stops a name that merely
// resolves to a metadata address; these entries stop the names before any
// lookup, including the two that resolve to public addresses.
var builtinNames = []struct{ name, why string }{
	// Google Cloud: cloud.google.com/compute/docs/metadata/querying-metadata
	// ("metadata.google.internal", and "metadata" through the VM's DNS
	// search path); metadata.goog is the newer documented name.
	{"metadata.google.internal", "Google Cloud metadata server"},
	{"metadata.goog", "Google Cloud metadata server"},
	{"metadata", "Google Cloud metadata server (short name)"},
	// AWS EC2: docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html
	// ("instance-data" through the VPC resolver's search domain, ec2.internal
	// in us-east-1 and <region>.compute.internal elsewhere: see
	// instanceDataPattern).
	{"instance-data", "AWS EC2 instance metadata"},
	{"instance-data.ec2.internal", "AWS EC2 instance metadata"},
	// IBM Cloud VPC: cloud.ibm.com/apidocs/vpc-metadata.
	{"api.metadata.cloud.ibm.com", "IBM Cloud VPC instance metadata"},
	// Tencent Cloud CVM: intl.cloud.tencent.com/document/product/213/4934.
	{"metadata.tencentyun.com", "Tencent Cloud instance metadata"},
	// Equinix Metal (formerly Packet): deploy.equinix.com/developers/docs/metal/server-metadata/metadata.
	// These two resolve to public addresses, so only a name block stops them.
	{"metadata.platformequinix.com", "Equinix Metal metadata"},
	{"metadata.packet.net", "Equinix Metal metadata"},
	// Rancher 1.x metadata service (rancher.com/docs/rancher/v1.6/en/rancher-services/metadata-service).
	{"rancher-metadata", "Rancher metadata service"},
	// Azure, Oracle, Alibaba, DigitalOcean, Hetzner, OpenStack and Huawei
	// publish no metadata host name: their services are reached by the
	// addresses below.
}

// instanceDataPattern is the AWS name "instance-data" completed by a
// regional search domain, instance-data.<region>.compute.internal.
const instanceDataPattern = "instance-data.*.compute.internal"

// builtinPrefixes are the metadata and link-local addresses that no policy
// can open.
var builtinPrefixes = []struct{ prefix, why string }{
	// RFC 3927 link-local, home of 169.254.169.254 (AWS, GCP, Azure, Oracle,
	// DigitalOcean, Hetzner, OpenStack, IBM, Huawei IMDS), 169.254.170.2
	// (AWS ECS task metadata), 169.254.170.23 (EKS Pod Identity) and
	// 169.254.0.23 (Tencent).
	{"169.254.0.0/16", "IPv4 link-local and cloud metadata"},
	{"100.100.100.200/32", "Alibaba Cloud metadata"},
	{"192.0.0.192/32", "Oracle Cloud legacy metadata"},
	{"168.63.129.16/32", "Azure WireServer"},
	{"fe80::/10", "IPv6 link-local"},
	// AWS Nitro IPv6 endpoints: fd00:ec2::254 (IMDS), ::23 (EKS Pod
	// Identity), ::253 (DNS), ::123 (NTP).
	{"fd00:ec2::/32", "AWS IPv6 instance services"},
	{"fd20:ce::254/128", "Google Cloud IPv6 metadata"},
}

// blockRule is the always-blocked entry that matched, and whether it is
// part of the built-in floor or came from the policy.
type blockRule struct {
	entry   string
	builtin bool
}

func (b blockRule) origin() string {
	if b.builtin {
		return "built-in"
	}
	return "policy"
}

// blockTable holds always-blocked names and addresses.
type blockTable struct {
	names map[string]blockRule
	addrs prefixTable[blockRule]
}

func newFloor() *blockTable {
	t := &blockTable{names: map[string]blockRule{}}
	for _, n := range builtinNames {
		t.names[n.name] = blockRule{entry: n.name, builtin: true}
	}
	for _, p := range builtinPrefixes {
		pfx := netip.MustParsePrefix(p.prefix)
		t.addrs.insert(pfx, blockRule{entry: prefixEntry(pfx), builtin: true})
	}
	return t
}

// prefixEntry writes a prefix as an entry: a single address without /32
// or /128.
func prefixEntry(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// floor is the built-in always-blocked floor.
var floor = newFloor()

// name reports the entry that blocks a normalised name: the name itself or
// any name it is under.
func (t *blockTable) name(name string) (blockRule, bool) {
	for s := name; ; {
		if b, ok := t.names[s]; ok {
			return b, true
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			break
		}
		s = s[i+1:]
	}
	if strings.HasPrefix(name, "instance-data.") && strings.HasSuffix(name, ".compute.internal") {
		return blockRule{entry: instanceDataPattern, builtin: true}, true
	}
	return blockRule{}, false
}

// addr reports the entry that blocks a, or an IPv4 address embedded in it,
// and the view (a itself or the embedded IPv4 address) that matched.
func (t *blockTable) addr(a netip.Addr) (blockRule, netip.Addr, bool) {
	v := viewsOf(a)
	return t.addrViews(&v)
}

// addrViews is addr on an address's views.
func (t *blockTable) addrViews(v *views) (blockRule, netip.Addr, bool) {
	for i := range v.n {
		if b, ok := t.addrs.lookup(v.a[i]); ok {
			return b, v.a[i], true
		}
	}
	return blockRule{}, netip.Addr{}, false
}

// IsAlwaysBlocked reports whether the built-in floor blocks addr: a cloud
// metadata or link-local address, or an IPv6 address that embeds one
// (IPv4-mapped, -compatible, -translated, NAT64, 6to4, Teredo, ISATAP).
func IsAlwaysBlocked(addr netip.Addr) bool {
	_, _, ok := floor.addr(addr)
	return ok
}

// IsAlwaysBlockedName reports whether the built-in floor blocks host, a
// host name in any spelling ParseTarget accepts, or an IP literal.
func IsAlwaysBlockedName(host string) bool {
	t, err := ParseTarget(host, 0)
	if err != nil {
		return false
	}
	if t.Name != "" {
		_, ok := floor.name(t.Name)
		return ok
	}
	return IsAlwaysBlocked(t.Addr)
}
