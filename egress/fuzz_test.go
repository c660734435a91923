package egress

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzGate allowlists everything a policy can: only the floor and the
// public-only rule stand between a fuzzed host and a dial.
var fuzzGate = func() *Gate {
	g, err := Compile(openConfig())
	if err != nil {
		panic(err)
	}
	return g
}()

func addFuzzSeeds(f *testing.F) {
	for _, s := range metadataSpellings {
		f.Add(s, uint16(80))
	}
	for _, s := range refusedSpellings {
		f.Add(s, uint16(443))
	}
	for _, s := range []string{"example.com", "bücher.de", "[::1]:80", "93.184.216.34:443", "xn--bcher-kva.de", "0x7f.1"} {
		f.Add(s, uint16(0))
	}
}

// checkCanonical fails unless tg is what ParseTarget promises.
func checkCanonical(t *testing.T, in string, tg Target) {
	t.Helper()
	if tg.Name != "" {
		if !isCanonicalName(tg.Name) || tg.Addr.IsValid() {
			t.Fatalf("%q: non-canonical target %+v", in, tg)
		}
		again, err := ParseTarget(tg.Name, tg.Port)
		if err != nil || again != tg {
			t.Fatalf("%q: name %q does not re-parse to itself: %+v, %v", in, tg.Name, again, err)
		}
		return
	}
	if !tg.Addr.IsValid() || tg.Addr.Zone() != "" || tg.Addr.Is4In6() {
		t.Fatalf("%q: bad address in %+v", in, tg)
	}
	again, err := ParseTarget(tg.Addr.String(), tg.Port)
	if err != nil || again != tg {
		t.Fatalf("%q: address %s does not re-parse to itself: %+v, %v", in, tg.Addr, again, err)
	}
}

// checkFloorHolds fails if the gate allows a target that the floor blocks.
func checkFloorHolds(t *testing.T, in string, tg Target) {
	t.Helper()
	blocked := false
	if tg.Name != "" {
		_, blocked = floor.name(tg.Name)
	} else {
		blocked = IsAlwaysBlocked(tg.Addr)
	}
	for _, task := range []string{"open", "wildcard", "narrow"} {
		d := fuzzGate.Check(task, tg)
		if d.Reason == "" || d.Gate != "egress" {
			t.Fatalf("%q: decision without gate or reason: %+v", in, d)
		}
		if blocked && d.Allowed() {
			t.Fatalf("%q: always-blocked target %+v allowed: %v", in, tg, d)
		}
	}
}

func FuzzParseTarget(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, host string, port uint16) {
		tg, err := ParseTarget(host, port)
		if err != nil {
			if tg != (Target{}) {
				t.Fatalf("%q: error %v with target %+v", host, err, tg)
			}
			return
		}
		if tg.Port != port {
			t.Fatalf("%q: port %d, want %d", host, tg.Port, port)
		}
		checkCanonical(t, host, tg)
		checkFloorHolds(t, host, tg)
		// Whatever netip accepts (no zone) must mean the same address here.
		if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil && a.Zone() == "" && host[0] != '[' {
			if tg.Addr != a.Unmap() {
				t.Fatalf("%q: parsed as %+v, netip says %s", host, tg, a)
			}
		}
	})
}

func FuzzSplitHostPort(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, hostport string, def uint16) {
		tg, err := SplitHostPort(hostport, def)
		if err != nil {
			return
		}
		checkCanonical(t, hostport, tg)
		checkFloorHolds(t, hostport, tg)
		if tg.Port != 0 {
			again, err := SplitHostPort(tg.String(), 1)
			if err != nil || again != tg {
				t.Fatalf("%q: String %q does not split back: %+v, %v", hostport, tg.String(), again, err)
			}
		}
	})
}

// FuzzCheck drives Check and CheckResolved with raw hosts, hand-built
// targets and arbitrary resolver answers: no panic, and nothing blocked
// is ever allowed or returned for dialling.
func FuzzCheck(f *testing.F) {
	for _, s := range metadataSpellings {
		f.Add(s, uint16(80), []byte{169, 254, 169, 254})
	}
	f.Add("example.com", uint16(443), []byte{93, 184, 216, 34, 127, 0, 0, 1})
	f.Add("x.example", uint16(443), append([]byte{0x20, 0x02, 169, 254, 169, 254}, make([]byte, 10)...))
	f.Add("search.example-corp.net", uint16(8080), []byte{127, 0, 0, 1, 192, 0, 2, 2})
	f.Add("127.0.0.1", uint16(8080), []byte{})
	f.Add("192.0.2.2", uint16(22), []byte{})
	f.Fuzz(func(t *testing.T, host string, port uint16, answer []byte) {
		var as []netip.Addr
		for len(answer) >= 4 {
			n := 4
			if answer[0]&1 == 1 && len(answer) >= 16 {
				n = 16
			}
			a, _ := netip.AddrFromSlice(answer[:n])
			as = append(as, a)
			answer = answer[n:]
		}
		for _, task := range []string{"open", "wildcard", "narrow", "none"} {
			d, tg := fuzzGate.CheckHost(task, host, port)
			if d.Reason == "" {
				t.Fatalf("%q: empty reason", host)
			}
			if d.Allowed() {
				checkFloorHolds(t, host, tg)
			}
			hd := fuzzGate.Check(task, Target{Name: host, Port: port})
			if hd.Allowed() {
				ptg, err := ParseTarget(host, port)
				if err != nil {
					t.Fatalf("hand-built %q allowed but does not parse: %v", host, err)
				}
				checkFloorHolds(t, host, ptg)
			}
			rd, dial := fuzzGate.CheckResolved(task, tg, as)
			if !rd.Allowed() {
				if dial != nil {
					t.Fatalf("%q: denied but dial %v", host, dial)
				}
				continue
			}
			if len(dial) == 0 {
				t.Fatalf("%q: allowed with nothing to dial", host)
			}
			for _, a := range dial {
				if IsAlwaysBlocked(a) {
					t.Fatalf("%q: dial list %v holds blocked %s", host, dial, a)
				}
				if tg.Name != "" && task == "wildcard" {
					if _, public := classify(a); !public {
						t.Fatalf("%q: wildcard reached non-public %s", host, a)
					}
				}
				// The host's own addresses: only "127.0.0.1:8080" and
				// "[::1]:8080" of the open task reach any.
				v := viewsOf(a)
				if _, own := fuzzGate.hostOwn(&v); own {
					u := a.Unmap()
					if task != "open" || tg.Port != 8080 || (u != netip.MustParseAddr("127.0.0.1") && u != netip.IPv6Loopback()) {
						t.Fatalf("%q (task %s, port %d): the host's own %s reached", host, task, tg.Port, a)
					}
				}
			}
			if tg.Name != "" {
				for _, a := range as {
					if IsAlwaysBlocked(a) {
						t.Fatalf("%q: answer %v holds blocked %s but was allowed", host, as, a)
					}
				}
			}
		}
	})
}

// spellIPv4 writes a random spelling of a (an IPv4 address) that a
// resolver reads as a: inet_aton forms, Unicode digits and dots, or an
// IPv6 form embedding it.
func spellIPv4(r *rand.Rand, a netip.Addr) string {
	b := a.As4()
	var s string
	switch r.IntN(10) {
	case 0:
		s = "::ffff:" + a.String()
	case 1:
		s = netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}).StringExpanded()
	case 2:
		s = netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}).String()
	case 3:
		s = netip.AddrFrom16([16]byte{0x20, 0x02, b[0], b[1], b[2], b[3], 6: byte(r.IntN(256)), 15: byte(r.IntN(256))}).String()
	case 4:
		s = netip.AddrFrom16([16]byte{0x20, 0x01, 4: byte(r.IntN(256)), 8: 0x80, 12: ^b[0], 13: ^b[1], 14: ^b[2], 15: ^b[3]}).String()
	case 5:
		s = netip.AddrFrom16([16]byte{12: b[0], 13: b[1], 14: b[2], 15: b[3]}).String()
	default:
		s = randomAtonSpelling(r, a, true)
		if r.IntN(4) == 0 {
			s += "."
		}
		if r.IntN(4) == 0 {
			s = widen(r, s)
		}
	}
	if strings.Contains(s, ":") {
		if r.IntN(2) == 0 {
			s = strings.ToUpper(s)
		}
		if r.IntN(2) == 0 {
			s = "[" + s + "]"
		}
	}
	return s
}

// widen replaces some ASCII digits, letters and dots with full-width or
// ideographic forms that UTS #46 maps back.
func widen(r *rand.Rand, s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '.' && r.IntN(2) == 0:
			b.WriteRune([]rune{'。', '．', '｡'}[r.IntN(3)])
		case (c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && r.IntN(2) == 0:
			b.WriteRune(c - 0x20 + 0xff00) // full-width form
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// FuzzMetadataSpelling writes random spellings of random addresses inside
// the floor's IPv4 ranges: every one must parse to that address and be
// refused as always blocked, even under "*", 0.0.0.0/0 and ::/0.
func FuzzMetadataSpelling(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(169), uint64(254))
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		r := rand.New(rand.NewPCG(s1, s2))
		bases := []netip.Addr{
			netip.MustParseAddr("169.254.169.254"),
			netip.AddrFrom4([4]byte{169, 254, byte(r.IntN(256)), byte(r.IntN(256))}),
			netip.MustParseAddr("169.254.170.2"),
			netip.MustParseAddr("100.100.100.200"),
			netip.MustParseAddr("192.0.0.192"),
			netip.MustParseAddr("168.63.129.16"),
		}
		a := bases[r.IntN(len(bases))]
		s := spellIPv4(r, a)
		if !utf8.ValidString(s) {
			t.Fatalf("bad spelling %q", s)
		}
		tg, err := ParseTarget(s, 80)
		if err != nil {
			t.Fatalf("spelling %q of %s: %v", s, a, err)
		}
		if !IsAlwaysBlocked(tg.Addr) {
			t.Fatalf("spelling %q of %s parsed to %s, not blocked", s, a, tg.Addr)
		}
		for _, task := range []string{"open", "wildcard", "narrow"} {
			d, _ := fuzzGate.CheckHost(task, s, 80)
			if d.Allowed() || !strings.Contains(d.Reason, " is always blocked: ") {
				t.Fatalf("spelling %q of %s: %v", s, a, d)
			}
		}
	})
}

// FuzzNameFastPath checks that the ASCII fast path of normaliseName gives
// what the IDNA profile gives.
func FuzzNameFastPath(f *testing.F) {
	for _, s := range []string{"Example.COM.", "xn--bcher-kva.de", "a--b.c", "-a.b", "a..b", "0x7f.1", "R3---SN.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := fastLDH(s)
		if !ok {
			return
		}
		slow, err := lookupProfile.ToASCII(s)
		fastName := strings.TrimSuffix(fast, ".")
		fastErr := validName(fastName)
		if err != nil {
			if fastErr == nil {
				t.Fatalf("%q: IDNA refuses (%v), fast path accepts %q", s, err, fastName)
			}
			return
		}
		slowName := strings.TrimSuffix(slow, ".")
		slowErr := validName(slowName)
		if (fastErr == nil) != (slowErr == nil) || fastErr == nil && fastName != slowName {
			t.Fatalf("%q: fast %q %v, IDNA %q %v", s, fastName, fastErr, slowName, slowErr)
		}
	})
}
