package authoring

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

// parse parses src as a policy named name, failing the test on error.
func parse(t testing.TB, name, src string) *policy.Loaded {
	t.Helper()
	l, err := policy.Parse(name, []byte(src))
	if err != nil {
		t.Fatalf("%s does not load: %v", name, err)
	}
	return l
}

// writeLog appends evs to a new audit log, as airlock writes one, and
// returns the events as read back from it (ReadLog's).
func writeLog(t testing.TB, evs ...audit.Event) []audit.Event {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if _, err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadLog(f, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// denied is the record of the command gate's refusal of argv for tool,
// under the policy p, as the enforcer writes it.
func denied(t testing.TB, p *policy.Loaded, tool string, argv ...string) audit.Event {
	t.Helper()
	d, err := newDecider(p.Policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	dec := d.command(tool, argv)
	if dec.Allowed() {
		t.Fatalf("%s %q is allowed", tool, argv)
	}
	return audit.FromDecision(dec, audit.Context{RunID: "run-test", Tool: tool, Task: tool, Command: argv[0], Args: argv[1:]})
}

// egressDenied is the record of the egress gate's refusal of host:port
// for task under p, as the proxy writes it.
func egressDenied(t testing.TB, p *policy.Loaded, task, host string, port uint16, addrs ...string) audit.Event {
	t.Helper()
	d, err := newDecider(p.Policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := d.eg.CheckHost(task, host, port)
	if dec.Allowed() && len(addrs) == 0 {
		t.Fatalf("%s %s:%d is allowed", task, host, port)
	}
	if dec.Allowed() {
		dec = decision.Decision{Gate: decision.GateEgress, Reason: "resolved to an address the entry does not reach"}
	}
	return audit.FromDecision(dec, audit.Context{RunID: "run-test", Task: task, Host: host, Port: port, Protocol: "connect", Addresses: addrs,
		Details: map[string]string{"client": "127.0.0.1:1", "requested": host}})
}
