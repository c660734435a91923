package runbook_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/canary"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/runbook"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// BenchmarkStartupProbes measures what the start-up probes cost inside a
// real sandbox: the checks the init runs (uid, capability sets,
// no_new_privs, seccomp, Landlock, interfaces, routes, /root and /home,
// the host's canary file and canary listener), here from a step (which
// adds the check that only stdio is open). ns/op is one run of all of
// them; the host side (the canary) is BenchmarkCanary.
//
//	go test ./runbook -run '^$' -bench StartupProbes -benchtime 1000x
func BenchmarkStartupProbes(b *testing.B) {
	testutil.RequireRoot(b)
	c, err := canary.New()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := c.Request()
	var cfg sandbox.Config
	cfg.BindSelf()
	cfg.Caps = benchCaps()
	ss, err := sandbox.StartSession(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	var out, errOut bytes.Buffer
	res, err := ss.Exec(context.Background(), sandbox.Step{Path: sandbox.SelfPath,
		Args:   []string{sandbox.SelfPath, "payload", "probe-bench", strconv.Itoa(b.N), req.CanaryFile, req.CanaryAddr},
		Stdout: &out, Stderr: &errOut})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("probe step: %+v %v %s", res, err, errOut.String())
	}
	var ns, failed int64
	if _, err := fmt.Sscan(strings.TrimSpace(out.String()), &ns, &failed); err != nil {
		b.Fatalf("probe step output %q: %v", out.String(), err)
	}
	if failed != 0 {
		b.Fatalf("%d probes failed inside the sandbox: %s", failed, errOut.String())
	}
	b.ReportMetric(float64(ns), "ns/op")
}

// BenchmarkLaunch is a whole launch of a one-step plan ("true"): gate,
// canary, sandbox, start-up probes, proxy, audit, the step, the checks
// after it, and the teardown. Compare with BenchmarkRun in enforcer
// (one command, no runbook).
//
//	go test ./runbook -run '^$' -bench Launch -benchtime 50x
func BenchmarkLaunch(b *testing.B) {
	testutil.RequireRoot(b)
	dir := b.TempDir()
	pol := loadTestPolicy(b)
	for i := 0; b.Loop(); i++ {
		log, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		enf, err := enforcer.New(pol, log, enforcer.Options{})
		if err != nil {
			b.Fatal(err)
		}
		opts := runbook.Options{RunID: fmt.Sprintf("bench-%d-%d", os.Getpid(), i), EvidenceDir: dir}
		res, err := runbook.Launch(context.Background(), enf, &runbook.Plan{TestID: "bench", Steps: []runbook.Step{{Tool: "other", Command: "true"}}}, opts)
		log.Close()
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

func benchCaps() limits.Caps {
	return limits.Caps{Wall: time.Minute, CPU: time.Minute, MemoryBytes: 512 << 20, Tasks: 64, DiskWriteBytes: 64 << 20, OpenFiles: 256, OutputBytes: 16 << 20}
}
