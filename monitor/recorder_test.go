package monitor

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
)

// recorder appends events to an audit log with a Monitor as its hook, as
// airlock's composition does (enforcer), and returns the alerts each
// append raised: alerts are written to the log right after the event
// that raised them, returned, and passed to the callback.
type recorder struct {
	log     *audit.Log
	mon     *Monitor
	onAlert func(audit.Event)
}

// openRecorder opens the audit log at path (see audit.Open) with a
// Monitor using th. onAlert, when not nil, is called with each alert once
// it is durable in the log.
func openRecorder(path string, th Thresholds, onAlert func(audit.Event), opts ...audit.Option) (*recorder, error) {
	mon := New(th)
	log, err := audit.Open(path, append(opts, audit.WithHook(mon))...)
	if err != nil {
		return nil, err
	}
	return &recorder{log: log, mon: mon, onAlert: onAlert}, nil
}

// Record appends ev and returns it as written, with the alerts that it
// (or a record the log added before it) raised.
func (r *recorder) Record(ev audit.Event) (audit.Event, []audit.Event, error) {
	return r.alerts(r.log.AppendAll(ev))
}

// RecordLazy is Record for an event no action waits on
// (audit.Log.AppendLazy).
func (r *recorder) RecordLazy(ev audit.Event) (audit.Event, []audit.Event, error) {
	return r.alerts(r.log.AppendLazy(ev))
}

// alerts picks the alerts out of the lines one append wrote and passes
// them to the callback.
func (r *recorder) alerts(written audit.Event, lines []audit.Event, err error) (audit.Event, []audit.Event, error) {
	if err != nil {
		return audit.Event{}, nil, err
	}
	var alerts []audit.Event
	for _, l := range lines {
		if l.Kind == audit.KindBehavioral && l.Decision == audit.DecisionAlert && l.Seq != written.Seq {
			alerts = append(alerts, l)
		}
	}
	if r.onAlert != nil {
		for _, a := range alerts {
			r.onAlert(a)
		}
	}
	return written, alerts, nil
}

// Close closes the log.
func (r *recorder) Close() error { return r.log.Close() }

// The test binary doubles as an airlock process that records one denied
// command: TestMain runs it when helperEnv is set.
const helperEnv = "AIRLOCK_MONITOR_TEST_RECORD"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		r, err := openRecorder(path, DefaultThresholds(), func(a audit.Event) { fmt.Println("ALERT", a.Context.Alert) })
		if err == nil {
			_, _, err = r.Record(commandDeny("git"))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// clock moves one second per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func verifyFile(t *testing.T, path string) audit.Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := audit.Verify(f)
	if err != nil {
		t.Fatalf("the log does not verify: %v", err)
	}
	return rep
}

func replayFile(t *testing.T, path string, th Thresholds) Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := Replay(f, th)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRecorderWritesAndReturnsAlerts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	th := Thresholds{EgressDenyBurst: 5, CommandDenyRepeat: 3, Window: 10 * time.Second}
	var live []audit.Event
	r, err := openRecorder(path, th, func(a audit.Event) { live = append(live, a) }, audit.WithClock((&clock{t: t0}).now))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var alerts []audit.Event
	for i := range 5 {
		ev, a, err := r.Record(egressDeny("evil.attacker.example"))
		if err != nil {
			t.Fatal(err)
		}
		if i < 4 && len(a) != 0 {
			t.Fatalf("denial %d raised %v", i+1, a)
		}
		if i == 4 && (len(a) != 1 || a[0].Seq != ev.Seq+1 || a[0].Prev != ev.Hash) {
			t.Fatalf("the fifth denial (seq %d) raised %+v, want one alert chained right after it", ev.Seq, a)
		}
		alerts = append(alerts, a...)
	}
	if len(live) != 1 || live[0].Hash != alerts[0].Hash {
		t.Errorf("callback got %v, want the alert", live)
	}
	a := alerts[0]
	if a.Context.Alert != RuleEgressDenyBurst || !slices.Equal(a.Context.TriggerSeqs, []uint64{2, 3, 4, 5, 6}) ||
		a.Context.Count != 5 || a.Context.WindowSeconds != 10 ||
		a.Reason != "5 denied egress attempts within 10s: a command-and-control or exfiltration signature" {
		t.Errorf("alert %+v", a)
	}
	rep := verifyFile(t, path)
	if rep.Events != 7 {
		t.Errorf("log has %d events, want chain start, 5 denials and the alert", rep.Events)
	}
	res := replayFile(t, path, th)
	if len(res.Recorded) != 1 || len(res.Recomputed) != 1 || len(res.Missing) != 0 {
		t.Errorf("replay: %d recorded, %d recomputed, %d missing; want 1, 1, 0",
			len(res.Recorded), len(res.Recomputed), len(res.Missing))
	}
}

// TestCommandDenialsAcrossProcesses runs three airlock processes, each
// denied one command: the third raises the repeated-denial alert, once.
func TestCommandDenialsAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for range 4 {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), helperEnv+"="+path)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, strings.TrimSpace(string(out)))
	}
	if !slices.Equal(outs, []string{"", "", "ALERT " + RuleCommandDenyRepeat, ""}) {
		t.Errorf("processes printed %q, want the third to alert", outs)
	}
	verifyFile(t, path)
	res := replayFile(t, path, DefaultThresholds())
	if len(res.Recorded) != 1 || len(res.Missing) != 0 || !slices.Equal(res.Recorded[0].Context.TriggerSeqs, []uint64{2, 3, 4}) {
		t.Errorf("replay: %+v", res)
	}
}

// TestConcurrentRecordersAlertExactlyOnce has several Recorders (separate
// open files, as separate processes have) deny egress at once: the first
// full threshold of denials raises one alert, the rest of the window's
// are held back in every Recorder (rate limited), and no denial counts
// twice.
func TestConcurrentRecordersAlertExactlyOnce(t *testing.T) {
	const writers, each, burst = 4, 15, 5
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	th := Thresholds{EgressDenyBurst: burst, Window: time.Hour}
	var wg sync.WaitGroup
	for range writers {
		r, err := openRecorder(path, th, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		wg.Go(func() {
			for range each {
				if _, _, err := r.Record(egressDeny("evil.attacker.example")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	verifyFile(t, path)
	res := replayFile(t, path, th)
	if len(res.Recorded) != 1 || len(res.Missing) != 0 {
		t.Fatalf("%d alerts recorded (%d missing), want 1", len(res.Recorded), len(res.Missing))
	}
	counted := map[uint64]bool{}
	for _, a := range res.Recorded {
		for _, s := range a.Context.TriggerSeqs {
			if counted[s] {
				t.Errorf("seq %d counted by two alerts", s)
			}
			counted[s] = true
		}
	}
}

// TestReplayFindsAlertsNoMonitorRaised replays a log written without a
// monitor: the alerts it should have had are reported missing.
func TestReplayFindsAlertsNoMonitorRaised(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		l.Append(commandDeny("git"))
	}
	l.Append(egressDeny("169.254.169.254"))
	l.Close()
	// A damaged line is skipped and counted.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("garbage\n")
	f.Close()
	res := replayFile(t, path, DefaultThresholds())
	var rules []string
	for _, a := range res.Missing {
		rules = append(rules, a.Context.Alert)
	}
	if len(res.Recorded) != 0 || !slices.Equal(rules, []string{RuleCommandDenyRepeat, RuleMetadataAccess}) ||
		res.Events != 5 || res.Damaged != 1 {
		t.Errorf("replay: recorded %d, missing %v, events %d, damaged %d", len(res.Recorded), rules, res.Events, res.Damaged)
	}
	if _, err := Replay(bytes.NewReader(bytes.Repeat([]byte("x"), audit.MaxLineBytes+2)), DefaultThresholds()); err == nil {
		t.Error("Replay accepted a line over the limit")
	}
}

// TestRecordLazy records a connection's end lazily: it is in the log, in
// the chain, and a decision is refused that way.
func TestRecordLazy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	r, err := openRecorder(path, DefaultThresholds(), nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := audit.Event{Kind: audit.KindEgress, Decision: audit.DecisionInfo, Reason: "connection closed",
		Context: audit.Context{Host: "example.com"}}
	if _, _, err := r.RecordLazy(closed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.RecordLazy(commandDeny("git")); err != audit.ErrDecisionNotLazy {
		t.Errorf("RecordLazy of a denial: %v, want audit.ErrDecisionNotLazy", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Verify(bytes.NewReader(b)); err != nil || rep.Lines != 2 || !bytes.Contains(b, []byte("connection closed")) {
		t.Fatalf("log %q: %+v, %v; want the chain start and the closed line", b, rep, err)
	}
}
