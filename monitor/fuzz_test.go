package monitor

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
)

// FuzzReplay checks that Replay never panics on any input and that every
// alert it recomputes names a rule and its triggering events.
func FuzzReplay(f *testing.F) {
	path := filepath.Join(f.TempDir(), "audit.jsonl")
	r, err := openRecorder(path, Thresholds{EgressDenyBurst: 2, CommandDenyRepeat: 2, Window: time.Minute}, nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, ev := range []audit.Event{commandDeny("git"), commandDeny("git"), egressDeny("169.254.169.254"), egressDeny("x")} {
		if _, _, err := r.Record(ev); err != nil {
			f.Fatal(err)
		}
	}
	r.Close()
	good, _ := os.ReadFile(path)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Replay(bytes.NewReader(data), Thresholds{EgressDenyBurst: 2, CommandDenyRepeat: 2, Window: time.Minute})
		if err != nil {
			return
		}
		for _, a := range res.Recomputed {
			if a.Context.Alert == "" || len(a.Context.TriggerSeqs) == 0 || a.Reason == "" {
				t.Fatalf("recomputed alert without rule, trigger or reason: %+v", a)
			}
		}
	})
}
