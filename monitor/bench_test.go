package monitor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
)

// BenchmarkObserve is the monitor's cost per event on the hot path: a
// denied egress attempt checked against the metadata floor and counted.
func BenchmarkObserve(b *testing.B) {
	m := New(DefaultThresholds())
	ev := egressDeny("evil.attacker.example", "93.184.215.14")
	b.ReportAllocs()
	var seq uint64
	for b.Loop() {
		seq++
		ev.Seq, ev.TS = seq, t0.Add(time.Duration(seq)*time.Millisecond)
		m.Observe(ev)
	}
}

// BenchmarkRecord is one durable event with the monitor watching, to set
// beside audit's BenchmarkAppend (the same without the monitor).
func BenchmarkRecord(b *testing.B) {
	r, err := openRecorder(filepath.Join(b.TempDir(), "audit.jsonl"), DefaultThresholds(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ev := commandDeny("git")
	ev.Decision = audit.DecisionAllow
	for b.Loop() {
		if _, _, err := r.Record(ev); err != nil {
			b.Fatal(err)
		}
	}
}
