package egress

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// benchConfig builds a task allowlist of n entries: a quarter exact
// names, a quarter "*.suffix", a quarter CIDRs of varied lengths, a
// quarter entries with ports, and "*".
func benchConfig(n int) Config {
	entries := []string{"*"}
	for i := 0; len(entries) < n; i++ {
		switch i % 4 {
		case 0:
			entries = append(entries, fmt.Sprintf("host%d.example%d.com", i, i%97))
		case 1:
			entries = append(entries, fmt.Sprintf("*.svc%d.example.net", i))
		case 2:
			a := netip.AddrFrom4([4]byte{byte(11 + i%200), byte(i / 200), byte(i), 0})
			entries = append(entries, netip.PrefixFrom(a, 24-i%3).Masked().String())
		default:
			entries = append(entries, fmt.Sprintf("api%d.example.org:%d", i, 1+i%65535))
		}
	}
	return Config{
		TaskAllowlist: map[string][]string{"t": entries, "other": {"example.com"}},
		AlwaysBlocked: []string{"169.254.169.254", "metadata.google.internal"},
	}
}

var benchSink decisionSink

type decisionSink struct {
	allowed bool
	n       int
}

func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		g := mustCompile(b, benchConfig(n))
		last := n - 1 - (n-1)%4 // index of an exact-name entry near the end
		cases := []struct {
			name string
			t    Target
		}{
			{"exact", Target{Name: fmt.Sprintf("host%d.example%d.com", last-4, (last-4)%97), Port: 443}},
			{"suffix", Target{Name: "a.b.c.svc5.example.net", Port: 443}},
			{"wildcard", Target{Name: "www.unlisted-site.example", Port: 443}},
			{"port", Target{Name: "api3.example.org", Port: 4}},
			{"ip-cidr", Target{Addr: netip.MustParseAddr("13.0.2.9"), Port: 443}},
			{"ip-public", Target{Addr: netip.MustParseAddr("93.184.216.34"), Port: 443}},
			{"ipv6-public", Target{Addr: netip.MustParseAddr("2606:2800:220:1::1"), Port: 443}},
			{"blocked-name", Target{Name: "metadata.google.internal", Port: 80}},
			{"blocked-addr", Target{Addr: netip.MustParseAddr("169.254.169.254"), Port: 80}},
			{"blocked-nat64", Target{Addr: netip.MustParseAddr("64:ff9b::a9fe:a9fe"), Port: 80}},
			{"nonpublic", Target{Addr: netip.MustParseAddr("127.0.0.1"), Port: 80}},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("entries=%d/%s", n, c.name), func(b *testing.B) {
				benchCPU(b, func() {
					d := g.Check("t", c.t)
					benchSink.allowed = d.Allowed()
				})
			})
			// The same decision without writing its reason: the lookups
			// alone, which allocate nothing.
			b.Run(fmt.Sprintf("entries=%d/%s/no-reason", n, c.name), func(b *testing.B) {
				benchCPU(b, func() {
					var v verdict
					t := c.t
					g.decide("t", &t, &v)
					benchSink.allowed = v.path == pathAllowed
				})
			})
		}
		b.Run(fmt.Sprintf("entries=%d/default-deny", n), func(b *testing.B) {
			t := Target{Name: "www.unlisted-site.example", Port: 443}
			benchCPU(b, func() {
				d := g.Check("other", t)
				benchSink.allowed = d.Allowed()
			})
		})
	}
}

// BenchmarkCheckHostPort is the whole decision as the proxy takes it: a
// CONNECT authority as the client wrote it, split, normalised and
// decided, with 10 and 10,000 allowlist entries. "warm" repeats one
// request, as a sandbox does; "cold" asks for a new port each time.
func BenchmarkCheckHostPort(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		g := mustCompile(b, benchConfig(n))
		last := n - 1 - (n-1)%4 // index of an exact-name entry near the end
		exact := fmt.Sprintf("host%d.example%d.com", last-4, (last-4)%97)
		cases := []struct{ name, hostport string }{
			{"exact", exact + ":443"},
			{"exact-upper", strings.ToUpper(exact[:1]) + exact[1:] + ":443"},
			{"suffix", "a.b.c.svc5.example.net:443"},
			{"wildcard", "www.unlisted-site.example:443"},
			{"ipv4", "93.184.216.34:443"},
			{"ipv4-cidr", "13.0.2.9:443"},
			{"ipv6", "[2606:2800:220:1::1]:443"},
			{"denied-nonpublic", "127.0.0.1:443"},
			{"metadata-name", "metadata.google.internal.:80"},
			{"metadata-dotted", "169.254.169.254:80"},
			{"metadata-hex", "0xA9FEA9FE:80"},
			{"metadata-mapped", "[::ffff:a9fe:a9fe]:80"},
			{"metadata-nat64", "[64:ff9b::a9fe:a9fe]:80"},
			{"idna", "bücher.de:443"},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("entries=%d/%s/warm", n, c.name), func(b *testing.B) {
				benchCPU(b, func() {
					d, _ := g.CheckHostPort("t", c.hostport, 443)
					benchSink.allowed = d.Allowed()
				})
			})
			host := c.hostport[:strings.LastIndexByte(c.hostport, ':')]
			b.Run(fmt.Sprintf("entries=%d/%s/cold", n, c.name), func(b *testing.B) {
				port := uint16(0)
				benchCPU(b, func() {
					port = port%65000 + 1
					d, _ := g.CheckHost("t", host, port)
					benchSink.allowed = d.Allowed()
				})
			})
		}
		b.Run(fmt.Sprintf("entries=%d/denied-default/warm", n), func(b *testing.B) {
			benchCPU(b, func() {
				d, _ := g.CheckHostPort("other", "www.unlisted-site.example:443", 443)
				benchSink.allowed = d.Allowed()
			})
		})
	}
}

func BenchmarkCheckResolved(b *testing.B) {
	g := mustCompile(b, benchConfig(10_000))
	t := Target{Name: "www.unlisted-site.example", Port: 443}
	answer := []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("2606:2800:220:1::1")}
	benchCPU(b, func() {
		d, dial := g.CheckResolved("t", t, answer)
		benchSink.allowed, benchSink.n = d.Allowed(), len(dial)
	})
}

func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		cfg := benchConfig(n)
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
