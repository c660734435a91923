package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

func TestSessionCapsDefaults(t *testing.T) {
	want := policy.EffectiveSession{MemoryMB: 1024, ProcessCount: 64, DiskWriteMB: 256, WallSeconds: 3600, IdleSeconds: 600}
	if got := policy.Default().SessionCaps(); got != want {
		t.Errorf("default session caps = %+v, want %+v", got, want)
	}
	l, err := policy.Parse("p.json", []byte(`{"toolScopes": {}, "session": {"memoryMb": 64, "idleSeconds": 1.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := l.SessionCaps()
	if got.MemoryMB != 64 || got.ProcessCount != 64 || got.Idle() != 1500*time.Millisecond || got.Wall() != time.Hour {
		t.Errorf("session caps = %+v", got)
	}
}

func TestSessionAndJustificationErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{"toolScopes": {}, "session": {"processCount": 0}}`, "session.processCount: processCount must be in [1, 65536], got 0"},
		{`{"toolScopes": {}, "egress": {"taskAllowlist": {"(none)": ["example.com"]}}}`, `task name "(none)" is reserved`},
		{`{"toolScopes": {}, "session": {"wallSeconds": 700000}}`, "session.wallSeconds: wallSeconds must be in (0, 604800], got 700000"},
		{`{"toolScopes": {}, "session": {"idleSeconds": -1}}`, "session.idleSeconds: idleSeconds must be in (0, 604800], got -1"},
		{`{"toolScopes": {}, "session": {"onAlert": ["metadata_acess"]}}`, `session.onAlert[0]: unknown alert "metadata_acess"`},
		{`{"toolScopes": {}, "session": {"onAlert": ["metadata_acess"]}}`, `did you mean "metadata_access"?`},
		{`{"toolScopes": {}, "session": {"onAlert": ["resource_kill", "resource_kill"]}}`, `session.onAlert[1]: alert "resource_kill" is named twice`},
		{`{"toolScopes": {"t": {"escalate": [{"name": "x", "command": "x", "justification": "a\u001b[2Jb"}]}}}`,
			"toolScopes.t.escalate[0].justification: justification is longer than 1024 bytes, or has control characters"},
		{`{"toolScopes": {"t": {"deny": [{"name": "x", "command": "x", "justification": "` + strings.Repeat("j", 1025) + `"}]}}}`,
			"toolScopes.t.deny[0].justification: justification is longer than 1024 bytes"},
	} {
		_, err := policy.Parse("p.json", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.src, err, c.want)
		}
	}
	l, err := policy.Parse("p.json", []byte(`{"toolScopes": {"t": {"escalate": [{"name": "x", "command": "x", "justification": "a person checks installs"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if j := l.ToolScopes["t"].Escalate[0].Justification; j != "a person checks installs" {
		t.Errorf("justification = %q", j)
	}
}

// TestStopsSession: session.onAlert names the alerts that stop a session.
func TestStopsSession(t *testing.T) {
	l, err := policy.Parse("p.json", []byte(`{"toolScopes": {}, "session": {"onAlert": ["egress_deny_burst", "metadata_access"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !l.StopsSession("metadata_access") || !l.StopsSession("egress_deny_burst") || l.StopsSession("resource_kill") || policy.Default().StopsSession("metadata_access") {
		t.Errorf("StopsSession: onAlert %v", l.Session.OnAlert)
	}
}
