package sandbox

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestSessionStopRacesExec: a session closed while a step starts, runs
// or leaves a daemon behind ends both at once, at any moment: Exec
// returns (the step's result or ErrSessionEnded), Close returns, and
// nothing of the session is left (startSession's check). A step asked
// for after it fails with ErrSessionEnded.
func TestSessionStopRacesExec(t *testing.T) {
	testutil.RequireRoot(t)
	for i := range 12 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			ss := startSession(t, Config{})
			done := make(chan error, 1)
			go func() {
				_, err := ss.Exec(context.Background(), shellStep("sleep 1000 & while :; do :; done"))
				done <- err
			}()
			time.Sleep(time.Duration(i*7) * time.Millisecond)
			within(t, 20*time.Second, "Close", func() { ss.Close() })
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, ErrSessionEnded) {
					t.Errorf("Exec: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Exec did not return after Close")
			}
			if _, err := ss.Exec(context.Background(), shellStep("true")); !errors.Is(err, ErrSessionEnded) {
				t.Errorf("Exec after Close: %v, want ErrSessionEnded", err)
			}
		})
	}
}
