package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// TestOneAllocationPerDecision: a decision costs exactly one allocation,
// its reason string, on every path, even for the longest names and
// addresses (the builder is grown once to a bound on the reason).
func TestOneAllocationPerDecision(t *testing.T) {
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
	cases := []struct {
		name string
		task string
		t    Target
	}{
		{"allowed exact", task, Target{Name: long, Port: 65535}},
		{"allowed suffix", task, Target{Name: "a." + entry[2:], Port: 65535}},
		{"allowed wildcard", task, Target{Name: "www.example.com", Port: 443}},
		{"allowed cidr", task, Target{Addr: v6, Port: 65535}},
		{"blocked name", task, Target{Name: "a.blocked." + strings.Repeat("y", 60) + ".example", Port: 65535}},
		{"blocked addr", task, Target{Addr: netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), Port: 65535}},
		{"blocked teredo", task, Target{Addr: netip.MustParseAddr("2001:0:ffff:ffff:ffff:ffff:5601:5601"), Port: 65535}},
		{"non-public", task, Target{Addr: netip.MustParseAddr("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), Port: 65535}},
		{"default", "other", Target{Name: long, Port: 65535}},
		{"no task", "none", Target{Name: long, Port: 65535}},
		{"empty", task, Target{}},
	}
	for _, c := range cases {
		n := testing.AllocsPerRun(100, func() {
			if d := g.Check(c.task, c.t); d.Reason == "" {
				t.Fatal("empty reason")
			}
		})
		if n != 1 {
			t.Errorf("%s: %v allocations per decision, want 1", c.name, n)
		}
	}
	// CheckResolved adds the slice of addresses to dial when it allows.
	tg := Target{Name: "www.example.com", Port: 443}
	for _, c := range []struct {
		answer []netip.Addr
		want   float64
	}{
		{[]netip.Addr{netip.MustParseAddr("93.184.216.34"), v6}, 2},
		{[]netip.Addr{netip.MustParseAddr("169.254.169.254")}, 1},
		{nil, 1},
	} {
		n := testing.AllocsPerRun(100, func() { g.CheckResolved(task, tg, c.answer) })
		if n != c.want {
			t.Errorf("CheckResolved(%v): %v allocations, want %v", c.answer, n, c.want)
		}
	}
}
