package sandbox

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox/holes"
)

// TestInitOutputNotTheTargets: what the init writes — here, a line on
// its stdout and a panic, once the target has started (test hole
// init-writes) — reaches neither of the target's streams: the init has
// a channel of its own, which airlock reads for its report of the death.
func TestInitOutputNotTheTargets(t *testing.T) {
	testutil.RequireRoot(t)
	testInitOutput(t)
}

func testInitOutput(t *testing.T) {
	holes.Open(t, holes.InitWrites)
	cfg := shellConfig("echo target out; echo target err >&2; sleep 5")
	res, out, errOut := run(t, cfg)
	if res.InitDied == "" {
		t.Fatalf("result %+v: the init's panic was not seen as its death", res)
	}
	for _, s := range []string{out, errOut} {
		if strings.Contains(s, "init") || strings.Contains(s, "panic") || strings.Contains(s, "goroutine") {
			t.Errorf("the target's streams carry the init's output: stdout %q, stderr %q", out, errOut)
		}
	}
	if !strings.Contains(res.InitDied, "it wrote: the init's own output (test hole)") {
		t.Errorf("initDied %q does not say what the init wrote", res.InitDied)
	}
}
