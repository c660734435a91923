package proxy

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

func TestEventJSON(t *testing.T) {
	ev := Event{
		Stage: StageClosed, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Task: "web_search",
		Client: "127.0.0.1:5000", Protocol: ProtocolConnect, Requested: "Search.Example-Corp.NET.:443",
		Target:   egress.Target{Name: "search.example-corp.net", Port: 443},
		Resolved: addrs("127.0.0.1"), Dialled: netip.MustParseAddrPort("127.0.0.1:443"),
		Decision: decision.Decision{Gate: decision.GateEgress, Verdict: decision.Allow, Reason: "r", Rule: "search.example-corp.net"},
		BytesUp:  10, BytesDown: 20, Duration: 1500 * time.Microsecond, Err: errors.New("boom"),
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"stage":"closed","time":"2026-01-02T03:04:05Z","task":"web_search","client":"127.0.0.1:5000",` +
		`"protocol":"connect","requested":"Search.Example-Corp.NET.:443","target":"search.example-corp.net:443",` +
		`"resolved":["127.0.0.1"],"dialled":"127.0.0.1:443",` +
		`"decision":{"gate":"egress","decision":"allow","reason":"r","rule":"search.example-corp.net"},` +
		`"bytesUp":10,"bytesDown":20,"durationMs":1.5,"error":"boom"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	// A refusal: no target, no dial, and the zero decision reads as a
	// denial with a reason.
	b, _ = json.Marshal(Event{Stage: StageDecided, Protocol: ProtocolSOCKS5})
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	d := m["decision"].(map[string]any)
	if _, ok := m["dialled"]; ok || d["decision"] != "deny" || d["reason"] != decision.NoReason {
		t.Errorf("zero event: %s", b)
	}
}

func TestNewValidates(t *testing.T) {
	g, _ := egress.Compile(egress.Config{})
	for name, cfg := range map[string]Config{
		"no gate":        {Task: "t"},
		"no task":        {Gate: g},
		"negative limit": {Task: "t", Gate: g, Limits: Limits{IdleTimeout: -1}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// TestUnrecordedDecisionRefused: when Record cannot record an allowed
// decision, nothing is dialled and the client is told why.
func TestUnrecordedDecisionRefused(t *testing.T) {
	g, err := egress.Compile(egress.Config{TaskAllowlist: map[string][]string{"t": {"127.0.0.1:9"}}, Local: egress.FixedAddrs{}})
	if err != nil {
		t.Fatal(err)
	}
	dials := &dialLog{next: DialerFunc(testutil.LoopbackDialer(t))}
	p, err := New(Config{Task: "t", Gate: g, Dialer: dials, Record: func(Event) error { return errors.New("disk full") }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	defer p.Close()
	resp, _ := connect(t, ln.Addr().String(), "127.0.0.1:9")
	want := "allowed by the egress gate; the connection then failed: recording the decision: disk full"
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(ReasonHeader) != want {
		t.Errorf("CONNECT: status %d reason %q", resp.StatusCode, resp.Header.Get(ReasonHeader))
	}
	resp, _ = roundTrip(t, ln.Addr().String(), "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(ReasonHeader) != want {
		t.Errorf("GET: status %d reason %q", resp.StatusCode, resp.Header.Get(ReasonHeader))
	}
	if rep, _ := socksDial(t, ln.Addr().String(), atypIPv4, "127.0.0.1", 9); rep != repGeneralFailure {
		t.Errorf("SOCKS5: reply %d", rep)
	}
	if d := dials.dialled(); len(d) != 0 {
		t.Errorf("dialled %v", d)
	}
}

func TestAuditEvent(t *testing.T) {
	base := audit.Context{RunID: "r1", Tool: "web", Details: map[string]string{"x": "y"}}
	ev := Event{
		Stage: StageDecided, Task: "web_search", Client: "127.0.0.1:5000", Protocol: ProtocolSOCKS5,
		Requested: "Search.Example-Corp.NET:443", Target: egress.Target{Name: "search.example-corp.net", Port: 443},
		Resolved: addrs("127.0.0.1", "::1"),
		Decision: decision.Decision{Gate: decision.GateEgress, Verdict: decision.Allow, Reason: "allowed", Rule: "search.example-corp.net"},
	}
	a := AuditEvent(ev, base)
	c := a.Context
	if a.Kind != audit.KindEgress || a.Decision != "allow" || a.Reason != "allowed" || c.RunID != "r1" || c.Tool != "web" ||
		c.Task != "web_search" || c.Host != "search.example-corp.net" || c.Port != 443 || c.Protocol != "socks5" ||
		c.Rule != "search.example-corp.net" || c.Gate != decision.GateEgress ||
		len(c.Addresses) != 2 || c.Details["client"] != "127.0.0.1:5000" || c.Details["x"] != "y" ||
		c.Details["requested"] != "Search.Example-Corp.NET:443" {
		t.Errorf("decided: %+v", a)
	}
	if len(base.Details) != 1 {
		t.Errorf("AuditEvent changed the base context's details: %v", base.Details)
	}
	ev.Stage, ev.Dialled, ev.BytesUp, ev.BytesDown, ev.Duration = StageClosed, netip.MustParseAddrPort("127.0.0.1:443"), 5, 7, 1500*time.Millisecond
	a = AuditEvent(ev, base)
	if a.Decision != audit.DecisionInfo || a.Reason != "connection to search.example-corp.net:443 closed after 1.5s: 5 bytes sent, 7 received" ||
		len(a.Context.Addresses) != 1 || a.Context.Addresses[0] != "127.0.0.1:443" {
		t.Errorf("closed: %+v", a)
	}
	ev.Err = errors.New("connection reset")
	if a = AuditEvent(ev, base); a.Reason != "allowed by the egress gate; the connection to search.example-corp.net:443 failed: connection reset" {
		t.Errorf("failed: %q", a.Reason)
	}
	// A malformed request keeps the host as asked.
	a = AuditEvent(Event{Stage: StageDecided, Requested: "bad_host!:80", Decision: decision.Decision{Gate: decision.GateEgress, Reason: "malformed"}}, audit.Context{})
	if a.Context.Host != "bad_host!" || a.Decision != "deny" {
		t.Errorf("malformed: %+v", a)
	}
}
