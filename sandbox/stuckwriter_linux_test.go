package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// stuckWriter takes one write and then blocks for good, as a pipe that
// nobody reads does.
type stuckWriter struct{ first chan struct{} }

func (w stuckWriter) Write(b []byte) (int, error) {
	select {
	case w.first <- struct{}{}:
		return len(b), nil
	default:
		select {} // never returns
	}
}

// within fails t unless f returns within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v: a caller's writer that blocks holds it", what, d)
	}
}

// TestStuckWriterHoldsNothing: a caller's stdout that stops taking
// output (a pipe nobody reads) holds neither a run's end nor a session's
// step and stop: the command is killed by its wall cap, and the copies
// are abandoned a moment later, as os/exec's WaitDelay did.
func TestStuckWriterHoldsNothing(t *testing.T) {
	testutil.RequireRoot(t)
	t.Run("run", func(t *testing.T) {
		cfg := shellConfig("yes")
		cfg.Caps.Wall = time.Second
		cfg.Stdout, cfg.Stderr = stuckWriter{make(chan struct{}, 1)}, stuckWriter{make(chan struct{}, 1)}
		s, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(); err != nil {
			s.Kill()
			t.Fatal(err)
		}
		within(t, 20*time.Second, "Wait", func() {
			if res, _ := s.Wait(); res.KilledBy != "wall" {
				t.Errorf("result %+v, want killed by wall", res)
			}
		})
	})
	t.Run("session", func(t *testing.T) {
		ss := startSession(t, Config{})
		st := shellStep("yes")
		st.Caps = &StepCaps{Wall: time.Second, CPU: 10 * time.Second}
		st.Stdout, st.Stderr = stuckWriter{make(chan struct{}, 1)}, stuckWriter{make(chan struct{}, 1)}
		within(t, 20*time.Second, "Exec", func() {
			if res, err := ss.Exec(context.Background(), st); res.KilledBy != "wall" {
				t.Errorf("step %+v, %v, want killed by wall", res, err)
			}
		})
		within(t, 20*time.Second, "Close", func() { ss.Close() })
	})
}
