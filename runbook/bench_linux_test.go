package runbook

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
)

// The host-side costs of the runbook: the canary of every launch, and
// the escape checks run after every step (and, for the cgroup scan and
// the canary, four times a second during it). Run with
//
//	go test ./runbook -run '^$' -bench . -benchtime 2000x

// BenchmarkCgroupScan is the "process outside its cgroup" check: every
// process on the host is tied to the sandbox or not (pid namespace,
// ancestry), and the sandbox's are compared with the init's cgroups. The
// test process stands in for the init.
func BenchmarkCgroupScan(b *testing.B) {
	p, err := newSandboxProcs(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	ents, _ := os.ReadDir("/proc")
	b.ReportMetric(float64(len(ents)), "proc-entries")
	for b.Loop() {
		if out := p.outsideCgroup(); len(out) > 0 {
			b.Fatalf("test process outside its own cgroup: %v", out)
		}
	}
}

// BenchmarkChainCheck verifies the audit chain from a launch event
// followed by 100 events (a plan of some 30 steps with egress).
func BenchmarkChainCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	log, err := audit.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	for i := range 50 {
		log.Append(audit.Event{Kind: audit.KindCommand, Decision: audit.DecisionAllow, Reason: fmt.Sprint("before ", i)})
	}
	launched, err := log.Append(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: reasonLaunched,
		Context: audit.Context{Event: audit.EventSandboxLaunched}})
	if err != nil {
		b.Fatal(err)
	}
	w, err := watchChain(path, launched)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		log.Append(audit.Event{Kind: audit.KindResource, Decision: audit.DecisionInfo, Reason: fmt.Sprint("step ", i),
			Context: audit.Context{RunID: "r", Details: map[string]string{"step": fmt.Sprint(i)}}})
	}
	for b.Loop() {
		if err := w.check(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHostSnapshot snapshots and compares the default watched
// files and a 200-entry workspace tree.
func BenchmarkHostSnapshot(b *testing.B) {
	ws := b.TempDir()
	for i := range 20 {
		d := filepath.Join(ws, fmt.Sprint("d", i))
		os.Mkdir(d, 0o755)
		for j := range 9 {
			os.WriteFile(filepath.Join(d, fmt.Sprint("f", j)), []byte("x"), 0o644)
		}
	}
	exe, _ := os.Executable()
	files := append(append([]string{}, defaultSentinels...), exe)
	trees := []watchedTree{{Path: ws}}
	before := snapshotHost(files, trees, nil)
	b.ReportMetric(float64(len(before.Files)), "paths")
	for b.Loop() {
		if ch := before.changes(snapshotHost(files, trees, nil)); len(ch) > 0 {
			b.Fatal(ch)
		}
	}
}
