package runbook_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/runbook"
)

// TestLaunchOnFullDisk fills the audit log's disk (a 64 KiB tmpfs) at
// each point of a launch: before the steps' decisions, after them (the
// launch record), after the launch (the first step's outcome), under a
// proxy decision in a step, and after the last step (the teardown).
// Nothing whose decision is not durable runs or connects, no step runs
// after a record was refused, and nothing is silent: ExitSetup when no
// step ran, else ExitAudit, with AuditError naming the record.
func TestLaunchOnFullDisk(t *testing.T) {
	testutil.RequireRoot(t)
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := up.Addr().(*net.TCPAddr).Port
	pol := parsePolicy(t, strings.Replace(testPolicy, `"t": ["upstream.test"]`, fmt.Sprintf(`"t": ["127.0.0.1:%d"]`, port), 1))
	steps := func(first runbook.Step) []runbook.Step {
		return []runbook.Step{first, sh("two", "echo two > /findings/two")}
	}
	one := sh("one", "echo one > /findings/one")
	for _, c := range []struct {
		name   string
		steps  []runbook.Step
		fillAt func(audit.Event) bool // nil: before the launch
		exit   int
		record string   // AuditError's start
		ran    []string // the findings the steps left
	}{
		{name: "decision", steps: steps(one), exit: runbook.ExitSetup, record: "the command allow record"},
		{name: "launch", steps: steps(one), exit: runbook.ExitSetup, record: "the lifecycle sandbox_launched record",
			fillAt: func(ev audit.Event) bool { return ev.Kind == audit.KindCommand && ev.Context.Details["step"] == "2" }},
		{name: "step outcome", steps: steps(one), exit: runbook.ExitAudit, record: "the resource info record", ran: []string{"one"},
			fillAt: func(ev audit.Event) bool { return ev.Context.Event == audit.EventSandboxLaunched }},
		{name: "proxy allow", steps: steps(self("get", "http-get", fmt.Sprintf("http://127.0.0.1:%d/", port))),
			exit: runbook.ExitAudit, record: "the egress allow record",
			fillAt: func(ev audit.Event) bool { return ev.Context.Event == audit.EventSandboxLaunched }},
		{name: "teardown", steps: steps(one), exit: runbook.ExitAudit, record: "the lifecycle sandbox_torn_down record", ran: []string{"one", "two"},
			fillAt: func(ev audit.Event) bool { return ev.Kind == audit.KindResource && ev.Context.Details["step"] == "2" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			dir := testutil.SmallTmpfs(t, 64<<10)
			e.auditPath = filepath.Join(dir, "audit.jsonl")
			log, err := audit.Open(e.auditPath)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			e.log, e.pol = log, pol
			var once sync.Once
			var free func()
			fill := func() {
				once.Do(func() {
					free = testutil.FillDisk(t, dir, func() error {
						_, err := log.Append(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "filler"})
						return err
					})
				})
			}
			if c.fillAt == nil {
				fill()
			} else {
				e.eopts.OnEvent = func(ev audit.Event) {
					if c.fillAt(ev) {
						fill()
					}
				}
			}
			res, _ := e.launch(t, context.Background(), plan("full-disk", c.steps...))
			if res.ExitCode != c.exit || !strings.HasPrefix(res.AuditError, c.record) || !strings.Contains(res.AuditError, syscall.ENOSPC.Error()) {
				t.Errorf("exit %d, auditError %q (%s); want %d and %q, no space left", res.ExitCode, res.AuditError, res.Reason, c.exit, c.record)
			}
			var ran []string
			for _, name := range []string{"one", "two"} {
				if _, err := os.Stat(filepath.Join(e.findings, name)); err == nil {
					ran = append(ran, name)
				}
			}
			if fmt.Sprint(ran) != fmt.Sprint(c.ran) {
				t.Errorf("the steps that ran left %v, want %v", ran, c.ran)
			}
			if free != nil {
				free()
			}
			e.events(t) // the log verifies
			testutil.CheckNoSandboxLeft(t, res.RunID)
		})
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the upstream was reached %d times", n)
	}
}
