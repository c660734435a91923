package selftest

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/payload"
)

// TestMacBattery checks the macOS battery as the Linux tests can: every
// attempt names its control and what it tries, names are unique, and
// each sandboxed attempt runs one of the macOS payloads with its tools
// and tasks taken from the battery's policy.
func TestMacBattery(t *testing.T) {
	pol, err := Policy()
	if err != nil {
		t.Fatal(err)
	}
	fx, err := newFixtures()
	if err != nil {
		t.Fatal(err)
	}
	defer fx.close()
	seen := map[string]bool{}
	n := 0
	for _, fam := range macFamilies() {
		for _, a := range fam {
			n++
			if seen[a.id()] || a.control == "" || a.what == "" || a.plan == nil {
				t.Errorf("attempt %s: duplicate or incomplete", a.id())
			}
			seen[a.id()] = true
			if !a.sandboxed || a.family == FamilyCommand {
				continue
			}
			p, err := a.plan(fx)
			if err != nil {
				t.Errorf("%s: %v", a.id(), err)
				continue
			}
			for _, f := range p.cleanup {
				defer f()
			}
			if len(p.req.Args) < 2 || p.req.Args[0] != "payload" || !strings.HasPrefix(p.req.Args[1], "mac-") {
				t.Errorf("%s runs %v, not a macOS payload", a.id(), p.req.Args)
			}
			if _, ok := pol.ToolScopes[p.req.Tool]; !ok {
				t.Errorf("%s: tool %q is not in the battery's policy", a.id(), p.req.Tool)
			}
		}
	}
	if n < 15 {
		t.Errorf("the macOS battery has %d attempts", n)
	}
	for _, want := range []string{"filesystem/write-home", "filesystem/read-ssh", "filesystem/hardlink-secret", "network/no-proxy-bypass",
		"network/tcp4-host-loopback", "metadata/direct", "metadata/through-proxy", "resources/forkbomb", "resources/membomb"} {
		if !seen[want] {
			t.Errorf("the macOS battery lacks %s", want)
		}
	}
}

func TestForkbombJudge(t *testing.T) {
	o := &observation{}
	o.res.Decision = decision.Allow
	o.stdout = `{"attempt":"mac-forkbomb","succeeded":false,"errno":"EAGAIN","evidence":"started 40 processes; 3 refused"}` + "\n"
	o.reports = payload.Parse([]byte(o.stdout))
	if v := forkbombJudge(o); v.outcome != Contained {
		t.Errorf("EAGAIN from RLIMIT_NPROC: %+v", v)
	}
	o.reports[0].Succeeded, o.reports[0].Errno = true, ""
	if v := forkbombJudge(o); v.outcome != Escaped {
		t.Errorf("a bomb that started all its processes: %+v", v)
	}
}
