package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
)

// seedEgress is the egress part of the embedded default policy: the seed
// lab's phase 3.1 policy.
func seedEgress(t testing.TB) egress.Config {
	t.Helper()
	cfg := policy.Default().EgressConfig()
	if len(cfg.TaskAllowlist) == 0 {
		t.Fatal("the embedded default policy has no egress allowlist")
	}
	return cfg
}

// TestLabPhase3CasesThroughProxy runs the six cases of lab phase 3.3
// through the proxy over HTTP, CONNECT and SOCKS5: the allowed host is
// reached (resolved by the fake resolver to a loopback upstream), and each
// denied host is refused with the gate's reason before any lookup or dial.
func TestLabPhase3CasesThroughProxy(t *testing.T) {
	cfg := seedEgress(t)
	gate, err := egress.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tunnelUp := serveUpstream(t, "127.0.0.1:0", echo)
	httpUp := serveHTTPUpstream(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+r.Host)
	})
	answers := map[string][]netip.Addr{"search.example-corp.net": addrs(standIn("127.0.0.1"))}

	cases := []struct {
		task, host string
		allow      bool
		phrase     string
	}{
		{"web_search", "search.example-corp.net", true, `allowed by allowlist entry "search.example-corp.net"`},
		{"web_search", "evil.attacker.example", false, "denied by default: not in the task's egress allowlist"},
		{"fetch_docs", "search.example-corp.net", false, "denied by default: not in the task's egress allowlist"},
		{"install_deps", "registry.npmjs.org", false, "denied by default: not in the task's egress allowlist"},
		{"web_search", "169.254.169.254", false, `is always blocked: address 169.254.169.254 matches policy entry "169.254.169.254"`},
		{"any_task", "metadata.google.internal", false, `is always blocked: the name matches built-in entry "metadata.google.internal"`},
	}
	for _, c := range cases {
		for _, proto := range []Protocol{ProtocolHTTP, ProtocolConnect, ProtocolSOCKS5} {
			t.Run(fmt.Sprintf("%s/%s/%s", c.task, c.host, proto), func(t *testing.T) {
				h := newHarness(t, setup{cfg: &cfg, task: c.task, answers: answers})
				up := tunnelUp
				if proto == ProtocolHTTP {
					up = httpUp
				}
				want, _ := gate.CheckHost(c.task, c.host, up.port())
				if !strings.Contains(want.Reason, c.phrase) || want.Allowed() != c.allow {
					t.Fatalf("gate: %v, want allow=%v and %q", want, c.allow, c.phrase)
				}
				got := h.reach(t, proto, c.host, up)
				if got.allowed != c.allow {
					t.Fatalf("%s: reached=%v, want %v (%s)", proto, got.allowed, c.allow, got.reason)
				}
				evs := h.events.wait(t, StageDecided, 1)
				if ev := evs[0]; ev.Decision != want {
					t.Errorf("event decision %+v, want %+v", ev.Decision, want)
				}
				if c.allow {
					h.events.wait(t, StageClosed, 1)
					if d := h.dials.dialled(); len(d) != 1 || d[0] != up.hostPort(standIn("127.0.0.1")) {
						t.Errorf("dialled %v, want [%s]", d, up.hostPort(standIn("127.0.0.1")))
					}
					return
				}
				if got.reason != want.Reason {
					t.Errorf("refusal reason %q, want the gate's %q", got.reason, want.Reason)
				}
				if d := h.dials.dialled(); len(d) != 0 {
					t.Errorf("a refused request dialled %v", d)
				}
				if l := h.res.names(); len(l) != 0 {
					t.Errorf("a statically refused request was resolved: %v", l)
				}
				if evs[0].Decision.Verdict != decision.Deny {
					t.Errorf("event verdict %v, want deny", evs[0].Decision.Verdict)
				}
			})
		}
	}
}
