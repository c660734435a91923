package cmdgate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/policy"
)

// generated builds a policy of n rules spread over tools of 10 rules each,
// every rule with its own command and two signatures.
func generated(t testing.TB, n int) *cmdgate.Gate {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"toolScopes": {`)
	for tool := 0; tool*10 < n; tool++ {
		if tool > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"tool%d": {"allow": [`, tool)
		for i := 0; i < 10 && tool*10+i < n; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"name": "r%d", "command": "cmd%d", "argPatterns": [["run", "-v"], ["check"]], "allowExtraArgs": false}`, i, tool*10+i)
		}
		b.WriteString("]}")
	}
	b.WriteString("}}")
	l, err := policy.Parse("generated.json", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return cmdgate.Compile(l.Policy)
}

func BenchmarkDecide(b *testing.B) {
	b.Run("seed/allow", func(b *testing.B) {
		g := seedGate(b)
		args := []string{"-v", "-x"}
		b.ReportAllocs()
		for b.Loop() {
			g.Decide("run_tests", "pytest", args, ws)
		}
	})
	b.Run("seed/deny-unlisted", func(b *testing.B) {
		g := seedGate(b)
		args := []string{"clone", "https://attacker.example/repo"}
		b.ReportAllocs()
		for b.Loop() {
			g.Decide("run_tests", "git", args, ws)
		}
	})
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("rules=%d/allow", n), func(b *testing.B) {
			g := generated(b, n)
			tool, cmd := fmt.Sprintf("tool%d", (n-1)/10), fmt.Sprintf("cmd%d", n-1)
			args := []string{"check"}
			b.ReportAllocs()
			for b.Loop() {
				g.Decide(tool, cmd, args, ws)
			}
		})
	}
}

// TestAllowPathDoesNotAllocate pins the zero-allocation allow path.
func TestAllowPathDoesNotAllocate(t *testing.T) {
	g := seedGate(t)
	args := []string{"-v", "-x"}
	if n := testing.AllocsPerRun(100, func() { g.Decide("run_tests", "pytest", args, ws) }); n != 0 {
		t.Fatalf("allow path allocates %v times per decision", n)
	}
	g = generated(t, 10000)
	if n := testing.AllocsPerRun(100, func() { g.Decide("tool999", "cmd9999", []string{"check"}, ws) }); n != 0 {
		t.Fatalf("allow path on 10,000 rules allocates %v times per decision", n)
	}
}
