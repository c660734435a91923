package monitor

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// at is a second offset from t0.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func egressDeny(host string, addrs ...string) audit.Event {
	return audit.FromDecision(decision.Decision{Gate: decision.GateEgress, Verdict: decision.Deny,
		Reason: fmt.Sprintf("task %q: host %q denied by default: not in the task's egress allowlist", "web_search", host)},
		audit.Context{RunID: "r1", Task: "web_search", Host: host, Port: 443, Addresses: addrs})
}

func egressAllow(host string) audit.Event {
	ev := egressDeny(host)
	ev.Decision, ev.Reason = audit.DecisionAllow, "allowed"
	return ev
}

func commandDeny(cmd string) audit.Event {
	return audit.FromDecision(decision.Decision{Gate: decision.GateCommand, Verdict: decision.Deny,
		Reason: fmt.Sprintf("%q is not in the allowlist of tool %q", cmd, "run_tests")},
		audit.Context{Tool: "run_tests", Command: cmd})
}

func withVerdict(ev audit.Event, v string) audit.Event {
	ev.Decision = v
	return ev
}

func recordedAlert(rule string) audit.Event {
	return audit.Event{Kind: audit.KindBehavioral, Decision: audit.DecisionAlert, Reason: "recorded",
		Context: audit.Context{Alert: rule}}
}

// timed is an event at a time, given a seq by run.
type timed struct {
	t  float64
	ev audit.Event
}

// run feeds events to a new Monitor, with seqs 1, 2, …, and returns the
// alerts as "rule[seqs]".
func run(th Thresholds, evs []timed) []string {
	m := New(th)
	var got []string
	for i, e := range evs {
		ev := e.ev
		ev.Seq, ev.TS = uint64(i+1), at(e.t)
		for _, a := range m.Observe(ev) {
			got = append(got, fmt.Sprintf("%s%v", a.Context.Alert, a.Context.TriggerSeqs))
		}
	}
	return got
}

func repeat(n int, start, step float64, ev audit.Event) []timed {
	var out []timed
	for i := range n {
		out = append(out, timed{start + float64(i)*step, ev})
	}
	return out
}

func TestWindowRules(t *testing.T) {
	lab := Thresholds{EgressDenyBurst: 5, CommandDenyRepeat: 3, Window: 10 * time.Second}
	evil := egressDeny("evil.attacker.example")
	for _, tc := range []struct {
		name string
		th   Thresholds
		evs  []timed
		want []string
	}{
		{"five egress denials in 4s", lab, repeat(5, 0, 1, evil), []string{"egress_deny_burst[1 2 3 4 5]"}},
		{"four are not enough", lab, repeat(4, 0, 1, evil), nil},
		{"five spread over 12s", lab, repeat(5, 0, 3, evil), nil},
		{"first and last exactly a window apart", lab, repeat(5, 0, 2.5, evil), nil},
		{"old denials leave the window", lab, append(repeat(3, 0, 1, evil), repeat(4, 20, 1, evil)...), nil},
		{"one alert a window: the next burst is held back", lab, repeat(10, 0, 0.1, evil),
			[]string{"egress_deny_burst[1 2 3 4 5]"}},
		{"the count restarts after an alert", lab, append(repeat(10, 0, 0.1, evil), repeat(5, 11, 0.1, evil)...),
			[]string{"egress_deny_burst[1 2 3 4 5]", "egress_deny_burst[11 12 13 14 15]"}},
		{"allowed egress does not count", lab, append(repeat(4, 0, 1, evil), timed{4, egressAllow("docs.spec.host")}), nil},
		{"three denied commands", lab, repeat(3, 0, 4, commandDeny("git")), []string{"command_deny_repeat[1 2 3]"}},
		{"escalations and allows do not count", lab, []timed{
			{0, commandDeny("git")}, {1, withVerdict(commandDeny("sudo"), audit.DecisionEscalate)},
			{2, withVerdict(commandDeny("pytest"), audit.DecisionAllow)}, {3, commandDeny("curl")}}, nil},
		{"command and egress denials count apart", lab, []timed{
			{0, commandDeny("git")}, {1, evil}, {2, commandDeny("git")}, {3, evil}}, nil},
		{"a recorded alert resets its rule", lab, append(repeat(4, 0, 1, evil),
			timed{4, recordedAlert(RuleEgressDenyBurst)}, timed{5, evil}), nil},
		{"another rule's alert does not", lab, append(repeat(4, 0, 1, evil),
			timed{4, recordedAlert(RuleCommandDenyRepeat)}, timed{5, evil}), []string{"egress_deny_burst[1 2 3 4 6]"}},
		{"a threshold of 0 disables its rule", Thresholds{Window: time.Minute}, repeat(10, 0, 0, evil), nil},
		{"a threshold of 1 alerts once a window", Thresholds{CommandDenyRepeat: 1, Window: time.Minute},
			append(repeat(2, 0, 1, commandDeny("git")), timed{61, commandDeny("git")}),
			[]string{"command_deny_repeat[1]", "command_deny_repeat[3]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.th, tc.evs); !slices.Equal(got, tc.want) {
				t.Errorf("alerts %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEventRules(t *testing.T) {
	th := DefaultThresholds()
	killed := audit.Event{Kind: audit.KindResource, Decision: audit.DecisionKill, Reason: "memory cap",
		Context: audit.Context{RunID: "r2", Tool: "run_tests", KilledBy: "memory", Command: "python3"}}
	finished := audit.Event{Kind: audit.KindResource, Decision: audit.DecisionInfo, Reason: "within caps"}
	escape := audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "canary read",
		Context: audit.Context{Event: audit.EventEscapeSuspected}}
	refused := audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionDeny, Reason: "network probe reached the canary",
		Context: audit.Context{Event: audit.EventStartupRefused}}
	setup := audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "airlock could not run the command: not installed",
		Context: audit.Context{Event: audit.EventSetupFailed}}
	launched := audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "ok",
		Context: audit.Context{Event: audit.EventSandboxLaunched}}
	repaired := audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "repaired",
		Context: audit.Context{Event: audit.EventAuditRepaired}}
	budget := audit.Event{Kind: audit.KindEgress, Decision: audit.DecisionDeny, Reason: "budget task t reached: bytesOut of 600",
		Context: audit.Context{RunID: "r3", Task: "t", Event: audit.EventEgressBudgetReached}}
	for _, tc := range []struct {
		name   string
		ev     audit.Event
		rule   string
		reason string
	}{
		{"resource kill", killed, RuleResourceKill, "killed by its memory cap"},
		{"egress budget reached", budget, RuleEgressBudget, "bytesOut of 600"},
		{"run within its caps", finished, "", ""},
		{"metadata address", egressDeny("169.254.169.254"), RuleMetadataAccess, `("169.254.169.254")`},
		{"metadata name", egressDeny("metadata.google.internal"), RuleMetadataAccess, "metadata.google.internal"},
		{"metadata name, other spelling", egressDeny("METADATA.Google.Internal."), RuleMetadataAccess, "always-blocked"},
		{"metadata in mapped IPv6", egressDeny("::ffff:169.254.169.254"), RuleMetadataAccess, "always-blocked"},
		{"name resolving to metadata", egressDeny("rebind.attacker.example", "93.184.215.14", "169.254.169.254"),
			RuleMetadataAccess, "rebind.attacker.example"},
		{"ordinary denial", egressDeny("evil.attacker.example", "93.184.215.14"), "", ""},
		{"escape suspected", escape, RuleEscapeSuspected, "halt all tests"},
		{"start-up check failed", refused, RuleStartupRefused, "start-up check failed"},
		{"setup failed: no security event", setup, "", ""},
		{"sandbox launched", launched, "", ""},
		{"log repaired", repaired, RuleAuditRepaired, "damaged line, closed off at seq 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if line := writtenLine(t, tc.ev); tc.rule != "" && !New(th).Wants(tc.ev.Kind, tc.ev.Decision, line) {
				t.Errorf("the monitor does not want the line of an event it alerts on (audit.Sifter): %s", line)
			}
			ev := tc.ev
			ev.Seq, ev.TS = 9, t0
			alerts := New(th).Observe(ev)
			if tc.rule == "" {
				if len(alerts) != 0 {
					t.Fatalf("alerts %+v, want none", alerts)
				}
				return
			}
			if len(alerts) != 1 {
				t.Fatalf("got %d alerts, want one %s", len(alerts), tc.rule)
			}
			a := alerts[0]
			if a.Kind != audit.KindBehavioral || a.Decision != audit.DecisionAlert || a.Context.Alert != tc.rule ||
				!slices.Equal(a.Context.TriggerSeqs, []uint64{9}) || !strings.Contains(a.Reason, tc.reason) {
				t.Errorf("alert %s %s %s %v %q, want behavioral alert %s on [9] with …%s…",
					a.Kind, a.Decision, a.Context.Alert, a.Context.TriggerSeqs, a.Reason, tc.rule, tc.reason)
			}
			if a.Context.RunID != ev.Context.RunID || a.Context.Tool != ev.Context.Tool || a.Context.Task != ev.Context.Task {
				t.Errorf("alert context %+v does not name the trigger's run", a.Context)
			}
		})
	}
}

// writtenLine is ev's line as a Log writes it; for audit_repaired, which
// only a Log writes, the one it writes over a damaged line.
func writtenLine(t *testing.T, ev audit.Event) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	repaired := ev.Context.Event == audit.EventAuditRepaired
	if repaired {
		ev = audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "intact"}
		l, err := audit.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.Append(ev)
		l.Close()
		f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil || ferr != nil {
			t.Fatal(err, ferr)
		}
		f.WriteString(`{"seq":9,"ts`) // a writer that stopped mid-line
		f.Close()
	}
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(ev); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
	if repaired {
		for _, line := range lines {
			if bytes.Contains(line, []byte(audit.EventAuditRepaired)) {
				return line
			}
		}
		t.Fatalf("no audit_repaired line in %s", b)
	}
	return lines[len(lines)-1]
}

// TestMetadataFromTheEgressGate feeds the real gate's decisions for the
// lab's metadata cases to the monitor: the rule must recognise what the
// gate produces, including a policy's own always-blocked entry.
func TestMetadataFromTheEgressGate(t *testing.T) {
	g, err := egress.Compile(egress.Config{
		TaskAllowlist: map[string][]string{"web_search": {"search.example-corp.net"}},
		AlwaysBlocked: []string{"169.254.169.254", "169.254.170.2", "metadata.google.internal", "secrets.corp.example"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host  string
		alert bool
	}{
		{"169.254.169.254", true},
		{"0xa9fea9fe", true}, // 169.254.169.254, dotless hex
		{"metadata.google.internal", true},
		{"secrets.corp.example", true}, // the policy's own entry
		{"evil.attacker.example", false},
		{"search.example-corp.net", false}, // allowed
	} {
		d, tg := g.CheckHost("web_search", tc.host, 80)
		ctx := audit.Context{Task: "web_search", Host: tc.host, Port: 80}
		if tg.Addr.IsValid() {
			ctx.Addresses = []string{tg.Addr.String()}
		}
		ev := audit.FromDecision(d, ctx)
		ev.Seq, ev.TS = 1, t0
		var got bool
		for _, a := range New(DefaultThresholds()).Observe(ev) {
			got = got || a.Context.Alert == RuleMetadataAccess
		}
		if got != tc.alert {
			t.Errorf("%s (gate: %s): metadata alert %v, want %v", tc.host, d, got, tc.alert)
		}
	}
}

func TestThresholdsFromPolicy(t *testing.T) {
	if th := DefaultThresholds(); th.EgressDenyBurst != policy.DefaultEgressDenyBurst ||
		th.CommandDenyRepeat != policy.DefaultCommandDenyRepeat || th.Window != policy.DefaultWindowSeconds*time.Second {
		t.Errorf("defaults %+v", th)
	}
	burst, window := int64(7), 2.5
	th := ThresholdsFor(&policy.Policy{Monitor: &policy.Monitor{EgressDenyBurst: &burst, WindowSeconds: &window}})
	if th.EgressDenyBurst != 7 || th.CommandDenyRepeat != policy.DefaultCommandDenyRepeat || th.Window != 2500*time.Millisecond {
		t.Errorf("from policy: %+v", th)
	}
}

// TestCountRecordsAndRateLimit: a count record (audit's coalescing)
// counts as the refusals it stands for, and a rule alerts once a window
// for a run, the next alert saying how many were held back.
func TestCountRecordsAndRateLimit(t *testing.T) {
	m := New(Thresholds{EgressDenyBurst: 5, Window: 10 * time.Second})
	obs := func(sec float64, count int, run string) []audit.Event {
		ev := egressDeny("evil.attacker.example")
		ev.Seq, ev.TS, ev.Context.Count, ev.Context.RunID = uint64(sec*10)+1, at(sec), count, run
		return m.Observe(ev)
	}
	if a := obs(0, 7, "r1"); len(a) != 1 || a[0].Context.Count != 7 {
		t.Fatalf("a count record of 7: %+v", a)
	}
	if a := obs(1, 10, "r1"); len(a) != 0 {
		t.Fatalf("not held back: %+v", a)
	}
	if a := obs(1.5, 10, "r2"); len(a) != 1 {
		t.Fatalf("another run's alert was held back: %+v", a)
	}
	a := obs(11, 5, "r1")
	if len(a) != 1 || a[0].Context.Details["suppressed"] != "1" || !strings.Contains(a[0].Reason, "1 more egress_deny_burst alerts") {
		t.Fatalf("after the window: %+v", a)
	}
}

// TestRulesNamedInPolicy: the rules session.onAlert may name are the
// monitor's, every one of them.
func TestRulesNamedInPolicy(t *testing.T) {
	rules := []string{RuleEgressDenyBurst, RuleCommandDenyRepeat, RuleResourceKill, RuleMetadataAccess,
		RuleEscapeSuspected, RuleStartupRefused, RuleAuditRepaired, RuleEgressBudget}
	if !slices.Equal(policy.AlertNames, rules) {
		t.Errorf("policy.AlertNames = %v, want the monitor's rules %v", policy.AlertNames, rules)
	}
}
