package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
)

func TestAppendRoundTrip(t *testing.T) {
	clk := newTestClock()
	l, path := openTest(t, WithClock(clk.now))
	exit := 137
	in := []Event{
		denial("run_tests", "git", "clone", "https://attacker.example/repo"),
		FromDecision(decision.Decision{Gate: decision.GateCommand, Verdict: decision.Allow,
			Reason: `"pytest -v" matched allowlist entry "pytest" for tool "run_tests"`, Rule: "pytest"},
			Context{RunID: "r1", Tool: "run_tests", Task: "run_tests", Command: "pytest", Path: "/usr/bin/pytest", Args: []string{"-v"}}),
		FromDecision(decision.Decision{Gate: decision.GateEgress, Verdict: decision.Deny,
			Reason: "always blocked: metadata", Rule: "169.254.0.0/16"},
			Context{RunID: "r1", Task: "web_search", Host: "169.254.169.254", Port: 80, Protocol: "http", Addresses: []string{"169.254.169.254"}}),
		{Kind: KindResource, Decision: DecisionKill, Reason: "the run used its 2s of wall-clock time",
			Context: Context{RunID: "r1", Tool: "run_tests", KilledBy: "wall", ExitCode: &exit, Signal: 9, WallMs: 2001}},
		{Kind: KindLifecycle, Decision: DecisionInfo, Reason: "start-up checks passed",
			Context: Context{RunID: "r1", Event: EventSandboxLaunched, Details: map[string]string{"imageDigest": "sha256:ab", "testId": "t-1"}}},
		{Kind: KindBehavioral, Decision: DecisionAlert, Reason: "5 denied egress attempts within 10s",
			Context: Context{Alert: "egress_deny_burst", Count: 5, WindowSeconds: 10, TriggerSeqs: []uint64{3, 4, 5, 6, 7}}},
	}
	for i, ev := range in {
		got, err := l.Append(ev)
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if got.Seq != uint64(i+2) || got.Hash == "" || got.TS.IsZero() || got.TS.Location() != time.UTC {
			t.Errorf("Append %d returned seq %d hash %q ts %v", i, got.Seq, got.Hash, got.TS)
		}
	}
	lines := readLines(t, path)
	if len(lines) != len(in)+1 {
		t.Fatalf("got %d lines, want %d", len(lines), len(in)+1)
	}
	first, err := ParseLine(bytes.TrimSuffix(lines[0], []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	if first.Seq != 1 || first.Prev != Genesis || first.Context.Event != EventChainStarted || len(first.Context.ChainID) != 32 {
		t.Errorf("first line is %+v, want a chain_started record with a chain id", first)
	}
	for i, line := range lines[1:] {
		ev, err := ParseLine(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatalf("line %d: %v", i+2, err)
		}
		want := in[i]
		if ev.Kind != want.Kind || ev.Decision != want.Decision || ev.Reason != want.Reason {
			t.Errorf("line %d = %s %s %q, want %s %s %q", i+2, ev.Kind, ev.Decision, ev.Reason, want.Kind, want.Decision, want.Reason)
		}
	}
	rep, verr := verifyBytes(t, join(lines))
	if verr != nil {
		t.Fatal(verr)
	}
	if rep.Events != len(in)+1 || rep.ChainID != first.Context.ChainID || rep.HeadSeq != uint64(len(in)+1) {
		t.Errorf("report %+v", rep)
	}
	// Context fields survive the line.
	ev, _ := ParseLine(bytes.TrimSuffix(lines[4], []byte("\n")))
	if ev.Context.KilledBy != "wall" || ev.Context.ExitCode == nil || *ev.Context.ExitCode != 137 {
		t.Errorf("resource event context = %+v", ev.Context)
	}
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700 | os.ModeDir} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModePerm | os.ModeDir); got&^want != 0 {
			t.Errorf("%s has mode %v, want at most %v", p, got, want)
		}
	}
}

func TestAppendRefusesBadEvents(t *testing.T) {
	l, path := openTest(t)
	for _, tc := range []struct {
		name string
		ev   Event
		want string
	}{
		{"no reason", Event{Kind: KindCommand, Decision: DecisionDeny}, "no reason"},
		{"unknown kind", Event{Kind: "alert", Decision: DecisionAlert, Reason: "x"}, "unknown kind"},
		{"unknown decision", Event{Kind: KindCommand, Decision: "maybe", Reason: "x"}, "unknown decision"},
		{"forged chain start", Event{Kind: KindLifecycle, Decision: DecisionInfo, Reason: "x",
			Context: Context{Event: EventChainStarted}}, "written by the log itself"},
		{"forged repair", Event{Kind: KindLifecycle, Decision: DecisionInfo, Reason: "x",
			Context: Context{RepairedBytes: 3}}, "written by the log itself"},
	} {
		if _, err := l.Append(tc.ev); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Append error %v, want %q", tc.name, err, tc.want)
		}
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Errorf("refused events changed the file (%d bytes)", fi.Size())
	}
	l.Close()
	if _, err := l.Append(denial("t", "git")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
}

func TestAppendShortensHugeEvents(t *testing.T) {
	l, path := openTest(t)
	args := make([]string, 5000)
	long := strings.Repeat("é", 3000) // 6000 bytes, two-byte runes
	for i := range args {
		args[i] = long
	}
	ev, err := l.Append(denial("run_tests", "python3", args...))
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Context.Truncated || len(ev.Context.Args) == 0 || len(ev.Context.Args) > clipEntries {
		t.Errorf("event not shortened: truncated=%v args=%d", ev.Context.Truncated, len(ev.Context.Args))
	}
	if args[0] != strings.Repeat("é", 3000) {
		t.Error("shortening changed the caller's arguments")
	}
	lines := readLines(t, path)
	if n := len(lines[1]); n > MaxEventBytes {
		t.Errorf("line is %d bytes, over MaxEventBytes", n)
	}
	if _, verr := verifyBytes(t, join(lines)); verr != nil {
		t.Fatal(verr)
	}
}

func TestOpenRefusesWhatIsNotAnAuditLog(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"text":          "hello\nworld\n",
		"one line":      "not an audit line\n",
		"fragment only": `{"seq":1,"ts":`,
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: Open error %v, want ErrDamaged", name, err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("%s: Open changed the file", name)
		}
	}
	if _, err := Open(dir); err == nil {
		t.Error("Open of a directory succeeded")
	}
}

func TestTornFinalLineIsReportedThenRepaired(t *testing.T) {
	path, lines := writeLog(t, 4)
	good := join(lines)
	torn := append(bytes.Clone(good), lines[2][:40]...) // a writer died 40 bytes into a line
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	_, verr := verifyBytes(t, torn)
	if verr == nil || verr.Line != 6 || !strings.Contains(verr.Reason, "final line has no newline (40 bytes)") {
		t.Fatalf("Verify of a torn log = %v, want line 6: final line has no newline", verr)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, evs, err := l.AppendAll(denial("run_tests", "curl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Context.Event != EventAuditRepaired || evs[0].Seq != 6 || evs[1].Seq != 7 ||
		evs[0].Context.RepairedBytes != 40 {
		t.Fatalf("AppendAll on a torn log wrote %+v, want a repair record then the event", evs)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, torn) {
		t.Error("the repair changed the damaged bytes; they must stay as evidence")
	}
	rep, verr := verifyBytes(t, after)
	if verr != nil {
		t.Fatalf("Verify after repair: %v", verr)
	}
	if len(rep.Repairs) != 1 || rep.Repairs[0] != (Repair{Line: 6, MarkerLine: 7, Bytes: 40}) || rep.Events != 7 {
		t.Errorf("report after repair = %+v", rep)
	}
}

func TestDamagedLastLineWithNewlineIsRepaired(t *testing.T) {
	// A writer that ended a torn line with its newline and died before
	// writing the repair record leaves a damaged line with a newline.
	path, lines := writeLog(t, 3)
	damaged := append(join(lines), []byte("{\"seq\":5,\"ts\"\n")...)
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, verr := verifyBytes(t, damaged); verr == nil || verr.Line != 5 || verr.Reason != reasonNoHash {
		t.Fatalf("Verify = %v, want line 5: %s", verr, reasonNoHash)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(denial("run_tests", "curl")); err != nil {
		t.Fatal(err)
	}
	rep, verr := verifyBytes(t, join(readLines(t, path)))
	if verr != nil || len(rep.Repairs) != 1 || rep.Repairs[0].Line != 5 {
		t.Fatalf("after repair: %+v, %v", rep, verr)
	}
}

func TestTwoDamagedLinesAreRefused(t *testing.T) {
	path, lines := writeLog(t, 3)
	bad := append(join(lines), []byte("garbage\nmore garbage")...)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Open = %v, want ErrDamaged", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, bad) {
		t.Error("a refused Open changed the file")
	}
}

func TestSyncedBeforeAppendReturns(t *testing.T) {
	l, path := openTest(t)
	orig := syncData
	t.Cleanup(func() { syncData = orig })
	var syncs int
	syncData = func(f *os.File) error {
		syncs++
		// The line must already be written when it is synced.
		b, _ := os.ReadFile(path)
		if !bytes.Contains(b, []byte(`"command":"sync-check"`)) {
			t.Error("sync called before the event was written")
		}
		return orig(f)
	}
	if _, err := l.Append(denial("run_tests", "sync-check")); err != nil {
		t.Fatal(err)
	}
	if syncs != 1 {
		t.Errorf("Append synced %d times, want 1", syncs)
	}
	syncData = func(*os.File) error { return errors.New("disk on fire") }
	if _, err := l.Append(denial("run_tests", "git")); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Append with a failing sync returned %v, want the sync error", err)
	}
}

// TestAppendLazy checks that a lazy append is written at once but synced
// only by the next synced append or by Close, and that a decision is
// refused.
func TestAppendLazy(t *testing.T) {
	l, path := openTest(t)
	if _, err := l.Append(denial("run_tests", "first")); err != nil {
		t.Fatal(err)
	}
	orig := syncData
	t.Cleanup(func() { syncData = orig })
	var syncs int
	syncData = func(f *os.File) error { syncs++; return orig(f) }
	info := Event{Kind: KindLifecycle, Decision: DecisionInfo, Reason: "launched", Context: Context{Event: EventSandboxLaunched}}
	if _, _, err := l.AppendLazy(info); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); syncs != 0 || !bytes.Contains(b, []byte(`"reason":"launched"`)) {
		t.Fatalf("after AppendLazy: %d syncs, line written %v; want 0 and true", syncs, bytes.Contains(b, []byte("launched")))
	}
	for _, d := range []string{DecisionAllow, DecisionDeny, DecisionEscalate} {
		ev := denial("run_tests", "lazy")
		ev.Decision = d
		if _, _, err := l.AppendLazy(ev); !errors.Is(err, ErrDecisionNotLazy) {
			t.Errorf("AppendLazy of a %s decision: %v, want ErrDecisionNotLazy", d, err)
		}
	}
	if _, err := l.Append(denial("run_tests", "second")); err != nil || syncs != 1 {
		t.Fatalf("the next Append: %v, %d syncs; want 1", err, syncs)
	}
	if _, _, err := l.AppendLazy(info); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil || syncs != 2 {
		t.Fatalf("Close after a lazy append: %v, %d syncs; want 2", err, syncs)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rep, err := Verify(f); err != nil || rep.Lines != 5 {
		t.Fatalf("the chain: %+v, %v; want 5 lines verified", rep, err)
	}
}

func TestOpenRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "empty.conf")
	writeFile(t, target, nil)
	link := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("Open of a symlink = %v, want a refusal", err)
	}
}

// TestTwoLogsInterleaved appends through two Logs of one file in turn:
// each must see the other's lines (the file's size changed), not chain
// onto the end it last wrote itself.
func TestTwoLogsInterleaved(t *testing.T) {
	a, path := openTest(t)
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 6 {
		l := a
		if i%2 == 1 {
			l = b
		}
		ev, err := l.Append(denial("run_tests", fmt.Sprint("cmd", i)))
		if err != nil || ev.Seq != uint64(i+2) {
			t.Fatalf("append %d: seq %d, %v; want seq %d", i, ev.Seq, err, i+2)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rep, err := Verify(f); err != nil || rep.Lines != 7 {
		t.Fatalf("the chain: %+v, %v; want 7 lines", rep, err)
	}
}
