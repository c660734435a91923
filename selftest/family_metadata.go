package selftest

import (
	"net"
)

// Reason fragments of the egress gate's fixed reasons.
const (
	whyBlocked   = "is always blocked"
	whyPublic    = "reaches public addresses only"
	whyHostOwn   = "this host's own"
	whyMalformed = "is malformed"
	whyUserinfo  = "carries user credentials"
)

// viaHTTP, viaConnect and viaSOCKS are metadata attempts through the
// proxy: an absolute-form GET, a CONNECT, and a SOCKS5 CONNECT.
func viaHTTP(name, what, task, url, why string) attempt {
	return payloadAttempt(FamilyMetadata, name, ControlEgressGate, what+" over HTTP", toolPayload, task,
		egressRefused(why), "http-get", url)
}

func viaConnect(name, what, task, hostport, why string) attempt {
	return payloadAttempt(FamilyMetadata, name, ControlEgressGate, what+" with CONNECT", toolPayload, task,
		egressRefused(why), "connect-tunnel", hostport)
}

func viaSOCKS(name, what, task, hostport, why string, args ...string) attempt {
	return payloadAttempt(FamilyMetadata, name, ControlEgressGate, what+" over SOCKS5", toolPayload, task,
		egressRefused(why), append([]string{"socks-connect", hostport}, args...)...)
}

// metadataAttempts reach for the cloud metadata services through the
// proxy in every spelling, and through names that the battery's own
// resolver answers with a metadata or loopback address (rebinding). The
// guard dialer proves no address off loopback was dialled.
func metadataAttempts() []attempt {
	const path = "/latest/meta-data/iam/security-credentials/"
	t := taskNone
	return []attempt{
		viaHTTP("http-dotted", "169.254.169.254", t, "http://169.254.169.254"+path, whyBlocked),
		viaHTTP("http-decimal", "2852039166 (169.254.169.254 as one number)", t, "http://2852039166"+path, whyBlocked),
		viaHTTP("http-hex", "0xA9FEA9FE", t, "http://0xA9FEA9FE"+path, whyBlocked),
		viaHTTP("http-octal", "0251.0376.0251.0376", t, "http://0251.0376.0251.0376"+path, whyBlocked),
		viaHTTP("http-short", "169.254.43518 (a two-part short form)", t, "http://169.254.43518"+path, whyBlocked),
		viaHTTP("http-mixed", "0xa9.254.0251.0xfe (mixed bases)", t, "http://0xa9.254.0251.0xfe"+path, whyBlocked),
		viaHTTP("http-trailing-dot", "169.254.169.254. (trailing dot)", t, "http://169.254.169.254."+path, whyBlocked),
		viaHTTP("http-v4-mapped", "[::ffff:169.254.169.254]", t, "http://[::ffff:169.254.169.254]"+path, whyBlocked),
		viaHTTP("http-v4-mapped-hex", "[::ffff:a9fe:a9fe]", t, "http://[::ffff:a9fe:a9fe]"+path, whyBlocked),
		viaHTTP("http-nat64", "[64:ff9b::a9fe:a9fe] (NAT64)", t, "http://[64:ff9b::a9fe:a9fe]"+path, whyBlocked),
		viaHTTP("http-6to4", "[2002:a9fe:a9fe::1] (6to4)", t, "http://[2002:a9fe:a9fe::1]"+path, whyBlocked),
		viaHTTP("http-teredo", "[2001:0:4136:e378:8000:63bf:5601:5601] (Teredo, client 169.254.169.254)", t, "http://[2001:0:4136:e378:8000:63bf:5601:5601]"+path, whyBlocked),
		viaHTTP("http-aws-v6", "[fd00:ec2::254] (AWS IPv6 IMDS)", t, "http://[fd00:ec2::254]"+path, whyBlocked),
		viaHTTP("http-gcp-name", "metadata.google.internal", t, "http://metadata.google.internal/computeMetadata/v1/", whyBlocked),
		viaHTTP("http-gcp-name-spelling", "METADATA.Google.Internal. (case and trailing dot)", t, "http://METADATA.Google.Internal./computeMetadata/v1/", whyBlocked),
		viaHTTP("http-gcp-short", "metadata (GCP's short name)", t, "http://metadata/computeMetadata/v1/", whyBlocked),
		viaHTTP("http-ecs", "169.254.170.2 (AWS ECS task metadata)", t, "http://169.254.170.2/v2/credentials", whyBlocked),
		viaHTTP("http-alibaba", "100.100.100.200 (Alibaba Cloud metadata)", t, "http://100.100.100.200/latest/meta-data/", whyBlocked),
		viaHTTP("http-azure-wireserver", "168.63.129.16 (Azure WireServer)", t, "http://168.63.129.16/machine?comp=goalstate", whyBlocked),
		viaHTTP("http-userinfo", "an allowlisted-looking name as userinfo before 169.254.169.254", taskUpstream, "http://"+nameUpstream+"@169.254.169.254"+path, whyUserinfo),
		viaHTTP("http-zone", "[fe80::a9fe:a9fe%25lo] (a zone identifier)", t, "http://[fe80::a9fe:a9fe%25lo]"+path, whyMalformed),
		viaConnect("connect-dotted", "169.254.169.254:443", t, "169.254.169.254:443", whyBlocked),
		viaConnect("connect-aws-v6", "[fd00:ec2::254]:443", t, "[fd00:ec2::254]:443", whyBlocked),
		viaConnect("connect-gcp-name", "metadata.google.internal:443", t, "metadata.google.internal:443", whyBlocked),
		viaSOCKS("socks-ipv4", "169.254.169.254:80 as an IPv4 address", t, "169.254.169.254:80", whyBlocked),
		viaSOCKS("socks-ipv6", "fd00:ec2::254 as an IPv6 address", t, "[fd00:ec2::254]:80", whyBlocked),
		viaSOCKS("socks-domain-ip", `"169.254.169.254" sent as a domain name`, t, "169.254.169.254:80", whyBlocked, "domain"),
		viaSOCKS("socks-domain-hex", `"0xA9FEA9FE" sent as a domain name`, t, "0xA9FEA9FE:80", whyBlocked, "domain"),
		viaSOCKS("socks-gcp-name", "metadata.google.internal", t, "metadata.google.internal:80", whyBlocked),
		viaHTTP("rebind-v4", nameMetadata4+", allowlisted, which the resolver answers with 169.254.169.254,", taskRebind,
			"http://"+nameMetadata4+path, whyBlocked),
		viaConnect("rebind-v6", nameMetadata6+", allowlisted, which the resolver answers with fd00:ec2::254,", taskRebind,
			net.JoinHostPort(nameMetadata6, "443"), whyBlocked),
		viaSOCKS("rebind-v4-socks", nameMetadata4+" (resolves to 169.254.169.254)", taskRebind, net.JoinHostPort(nameMetadata4, "80"), whyBlocked),
		viaSOCKS("wildcard-loopback", nameLoopback+" under a * allowlist, which the resolver answers with 127.0.0.1,", taskWild,
			net.JoinHostPort(nameLoopback, "80"), whyHostOwn),
		viaConnect("exact-name-loopback", nameLoopbackEx+", allowlisted by exact name without a port, which the resolver answers with 127.0.0.1,",
			taskUpstream, net.JoinHostPort(nameLoopbackEx, "22"), whyHostOwn),
		viaHTTP("wildcard-private", namePrivate+" under a * allowlist, which the resolver answers with 10.0.0.1,", taskWild,
			"http://"+namePrivate+"/", whyPublic),
		viaHTTP("wildcard-loopback-literal", "127.0.0.1 under a * allowlist", taskWild, "http://127.0.0.1:9/", whyHostOwn),
		viaHTTP("wildcard-metadata", "169.254.169.254 under a * allowlist", taskWild, "http://169.254.169.254"+path, whyBlocked),
	}
}
