package audit

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
)

// manualClock is a clock that moves only when told.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *manualClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func egressDenial(run, host string, client int) Event {
	ev := FromDecision(decision.Decision{Gate: decision.GateEgress, Verdict: decision.Deny,
		Reason: fmt.Sprintf("task \"ci\": host %q is not in the allowlist: deny", host)},
		Context{RunID: run, Task: "ci", Host: host, Port: 443, Protocol: "connect",
			Details: map[string]string{"client": fmt.Sprintf("127.0.0.1:%d", 40000+client), "requested": host + ":443"}})
	return ev
}

// countRefusals adds up a log's refusals of run: one per record without a
// count, Count per count record.
func countRefusals(t *testing.T, path, run string) (full, counted, records int) {
	t.Helper()
	for _, ev := range parseEvents(t, readLines(t, path)) {
		if ev.Context.RunID != run || ev.Decision != DecisionDeny {
			continue
		}
		records++
		if ev.Context.Count > 0 {
			counted += ev.Context.Count
		} else {
			full++
		}
	}
	return full, counted, records
}

// TestCoalesceCountsEveryRefusal floods a log with refusals, identical
// and varied, and checks that the records are bounded and that their
// counts add up to every refusal made.
func TestCoalesceCountsEveryRefusal(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	l, path := openTest(t, WithClock(clk.now), WithCoalescing())
	n := 0
	for sec := range 3 {
		for i := range 1000 {
			if _, err := l.Append(egressDenial("run-a", "evil.example", i)); err != nil {
				t.Fatal(err)
			}
			n++
			if i%100 == 0 {
				clk.add(time.Millisecond)
			}
		}
		clk.add(time.Second)
		_ = sec
	}
	// Another run's refusals are its own.
	if w, err := l.Append(egressDenial("run-b", "evil.example", 0)); err != nil || w.Seq == 0 {
		t.Fatalf("run-b's first refusal was not written: %+v %v", w, err)
	}
	// A run that varies its refusals is capped per second.
	for i := range 500 {
		if _, err := l.Append(egressDenial("run-c", fmt.Sprintf("h%d.example", i), i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	full, counted, records := countRefusals(t, path, "run-a")
	if full != 1 || full+counted != n || records > 5 {
		t.Fatalf("run-a: %d full + %d counted in %d records, want 1 + %d in at most 5", full, counted, records, n-1)
	}
	full, counted, records = countRefusals(t, path, "run-c")
	if full != maxFullPerSecond || full+counted != 500 || records != maxFullPerSecond+1 {
		t.Fatalf("run-c: %d full + %d counted in %d records", full, counted, records)
	}
	if _, verr := verifyBytes(t, join(readLines(t, path))); verr != nil {
		t.Fatal(verr)
	}
}

// TestCoalesceTimerWrites: the count of a second is written a second
// later even when nothing else is appended.
func TestCoalesceTimerWrites(t *testing.T) {
	l, path := openTest(t, WithCoalescing())
	for i := range 20 {
		if _, err := l.Append(egressDenial("run-a", "evil.example", i)); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if full, counted, _ := countRefusals(t, path, "run-a"); full == 1 && counted == 19 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the count record was never written")
		}
	}
}
