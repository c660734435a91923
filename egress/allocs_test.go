package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// allocGate is a gate and a target on every decision path, with the
// longest names and addresses (the reason builder is grown once to a bound
// on the reason, whatever the lengths).
func allocGate(t *testing.T) (*Gate, []allocCase) {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
	task := strings.Repeat("t", 64)
	entry := "*." + strings.Repeat("x", 63) + ".example"
	g := mustCompile(t, Config{
		TaskAllowlist: map[string][]string{
			task: {long, entry, "*", "[2001:db8:ffff:ffff:ffff:ffff::/96]:65535"},
		},
		AlwaysBlocked: []string{"blocked." + strings.Repeat("y", 60) + ".example", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	})
	v6 := netip.MustParseAddr("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff")
	return g, []allocCase{
		{"allowed exact", task, Target{Name: long, Port: 65535}},
		{"allowed suffix", task, Target{Name: "a." + entry[2:], Port: 65535}},
		{"allowed wildcard", task, Target{Name: "www.example.com", Port: 443}},
		{"allowed cidr", task, Target{Addr: v6, Port: 65535}},
		{"blocked name", task, Target{Name: "a.blocked." + strings.Repeat("y", 60) + ".example", Port: 65535}},
		{"blocked addr", task, Target{Addr: netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), Port: 65535}},
		{"blocked teredo", task, Target{Addr: netip.MustParseAddr("2001:0:ffff:ffff:ffff:ffff:5601:5601"), Port: 65535}},
		{"non-public", task, Target{Addr: netip.MustParseAddr("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), Port: 65535}},
		{"non-public embedded", task, Target{Addr: netip.MustParseAddr("64:ff9b::ffff:ffff"), Port: 65535}},
		{"default", "other", Target{Name: long, Port: 65535}},
		{"no task", "none", Target{Name: long, Port: 65535}},
		{"empty", task, Target{}},
	}
}

type allocCase struct {
	name string
	task string
	t    Target
}

// TestNoAllocationOnRepeat: a decision the gate took recently costs no
// allocation on any path: its reason comes from the reason cache.
func TestNoAllocationOnRepeat(t *testing.T) {
	g, cases := allocGate(t)
	for _, c := range cases {
		g.Check(c.task, c.t) // kept from the second miss
		n := testing.AllocsPerRun(100, func() {
			if d := g.Check(c.task, c.t); d.Reason == "" {
				t.Fatal("empty reason")
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per repeated decision, want 0", c.name, n)
		}
	}
	// CheckResolved adds only the slice of addresses to dial when it
	// allows them all.
	task := cases[0].task
	tg := Target{Name: "www.example.com", Port: 443}
	g.CheckResolved(task, tg, []netip.Addr{netip.MustParseAddr("93.184.216.34")})
	n := testing.AllocsPerRun(100, func() {
		g.CheckResolved(task, tg, []netip.Addr{netip.MustParseAddr("93.184.216.34")})
	})
	if n != 1 {
		t.Errorf("CheckResolved: %v allocations, want 1 (the returned slice)", n)
	}
}

// TestOneAllocationWhenNew: a decision the gate has not taken recently
// costs one allocation, its reason, with or without the reason cache (the
// cache keeps a reason from the second miss, at the cost of one more).
func TestOneAllocationWhenNew(t *testing.T) {
	g, cases := allocGate(t)
	uncached := *g
	uncached.reasons = nil
	for _, c := range cases {
		if c.t == (Target{}) {
			continue // no port to vary
		}
		for _, gate := range []*Gate{g, &uncached} {
			port := uint16(1)
			n := testing.AllocsPerRun(100, func() {
				tg := c.t
				tg.Port, port = port, port+1 // a new key every time
				if d := gate.Check(c.task, tg); d.Reason == "" {
					t.Fatal("empty reason")
				}
			})
			if n != 1 {
				t.Errorf("%s (cache %v): %v allocations per new decision, want 1", c.name, gate.reasons != nil, n)
			}
		}
	}
	// CheckResolved: the slice to dial and a reason written afresh when
	// some address is dropped; the reason alone when it refuses.
	tg := Target{Name: "www.example.com", Port: 443}
	for _, c := range []struct {
		answer []netip.Addr
		want   float64
	}{
		{[]netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1")}, 2},
		{[]netip.Addr{netip.MustParseAddr("169.254.169.254")}, 1},
		{nil, 1},
	} {
		n := testing.AllocsPerRun(100, func() { g.CheckResolved(cases[0].task, tg, c.answer) })
		if n != c.want {
			t.Errorf("CheckResolved(%v): %v allocations, want %v", c.answer, n, c.want)
		}
	}
}
