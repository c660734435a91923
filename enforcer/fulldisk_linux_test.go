package enforcer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// fullDiskPolicy lets the payload run and reach one loopback port (an IP
// entry with its port: the way to allow a host address).
const fullDiskPolicy = `{
  "toolScopes": {
    "agent_code": {"allow": [{"name": "payload", "command": "/.airlock/self", "argPatterns": [["payload"]], "allowExtraArgs": true}],
                   "caps": {"cpuSeconds": 2, "wallSeconds": 5, "memoryMb": 128, "processCount": 32}}
  },
  "egress": {"taskAllowlist": {"up": ["127.0.0.1:%d"]}}
}`

// diskFiller fills the disk of a fixture's log, once, and frees it.
type diskFiller struct {
	t    *testing.T
	dir  string
	f    *fixture
	once sync.Once
	mu   sync.Mutex
	free func()
}

// fill fills the disk to the last byte a record could use: zeros, then
// filler records through a second writer on the same log.
func (d *diskFiller) fill() {
	d.once.Do(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.free = testutil.FillDisk(d.t, d.dir, func() error {
			l, err := audit.Open(d.f.path)
			if err != nil {
				return err
			}
			defer l.Close()
			_, err = l.Append(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "filler"})
			return err
		})
	})
}

// release frees the disk if it was filled and not freed yet.
func (d *diskFiller) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.free != nil {
		d.free()
		d.free = nil
	}
}

// freeOnWrite is a Stdout that, with d, frees the disk when the payload
// writes: the proxy has answered it by then.
type freeOnWrite struct {
	bytes.Buffer
	d *diskFiller
}

func (w *freeOnWrite) Write(b []byte) (int, error) {
	if w.d != nil {
		w.d.release()
	}
	return w.Buffer.Write(b)
}

// TestRunOnFullDisk fills the audit log's disk (a 64 KiB tmpfs) at each
// point of a run: before its decision, after it (the launch record), after
// the launch (the outcome), after the outcome (the teardown), and under a
// proxy decision mid-run, allowed or denied. Nothing is acted on whose
// decision is not durable, and nothing is silent: a run that never
// started exits 125, one that ran exits 74 (ExitAudit) keeping the
// command's own status, and AuditError names the record. Before, the
// outcome and teardown records were dropped and the run exited 0.
func TestRunOnFullDisk(t *testing.T) {
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
	upstream := up.Addr().(*net.TCPAddr)
	for _, c := range []struct {
		name   string
		args   []string
		fillAt func(audit.Event) bool // nil: before the run
		exit   int
		record string // in AuditError
		ran    string // what the payload printed ("" when it must not run)
		free   bool   // free the disk when the payload prints
	}{
		{name: "decision", args: []string{"echo", "ran"}, exit: enforcer.ExitSetup, record: "the command allow record"},
		{name: "launch", args: []string{"echo", "ran"}, exit: enforcer.ExitSetup, record: "the lifecycle sandbox_launched record",
			fillAt: func(ev audit.Event) bool { return ev.Kind == audit.KindCommand }},
		{name: "outcome", args: []string{"echo", "ran"}, exit: enforcer.ExitAudit, record: "the resource info record", ran: "ran\n",
			fillAt: func(ev audit.Event) bool { return ev.Context.Event == audit.EventSandboxLaunched }},
		{name: "teardown", args: []string{"echo", "ran"}, exit: enforcer.ExitAudit, record: "the lifecycle sandbox_torn_down record", ran: "ran\n",
			fillAt: func(ev audit.Event) bool { return ev.Kind == audit.KindResource }},
		{name: "proxy allow", args: []string{"http-get", fmt.Sprintf("http://127.0.0.1:%d/", upstream.Port)},
			exit: enforcer.ExitAudit, record: "the egress allow record", ran: "HTTP/1.1 503", free: true,
			fillAt: func(ev audit.Event) bool { return ev.Context.Event == audit.EventSandboxLaunched }},
		{name: "proxy deny", args: []string{"http-get", "http://169.254.169.254/"},
			exit: enforcer.ExitAudit, record: "the egress deny record", ran: "HTTP/1.1 403", free: true,
			fillAt: func(ev audit.Event) bool { return ev.Context.Event == audit.EventSandboxLaunched }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testutil.SmallTmpfs(t, 64<<10)
			f := newFixtureIn(t, dir, fmt.Sprintf(fullDiskPolicy, upstream.Port), nil)
			d := &diskFiller{t: t, dir: dir, f: f}
			if c.fillAt == nil {
				d.fill()
			} else {
				f.after = func(ev audit.Event) {
					if c.fillAt(ev) {
						d.fill()
					}
				}
			}
			out := &freeOnWrite{}
			if c.free {
				out.d = d
			}
			res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Task: "up",
				Command: sandbox.SelfPath, Args: append([]string{"payload"}, c.args...), Stdout: out})
			if res.ExitCode != c.exit || !strings.HasPrefix(res.AuditError, c.record) ||
				!strings.Contains(res.AuditError, syscall.ENOSPC.Error()) || err == nil {
				t.Errorf("exit %d, auditError %q, error %v; want %d and %q, no space left", res.ExitCode, res.AuditError, err, c.exit, c.record)
			}
			if c.exit == enforcer.ExitAudit && (!errors.Is(err, enforcer.ErrAudit) || res.CommandExitCode == nil || *res.CommandExitCode != 0) {
				t.Errorf("error %v, command exit %v; want ErrAudit and the command's 0", err, res.CommandExitCode)
			}
			if got := out.String(); c.ran == "" && got != "" || !strings.HasPrefix(got, c.ran) {
				t.Errorf("the payload printed %q, want %q", got, c.ran)
			}
			if c.free && !hasOutcome(f.events(res.RunID)) {
				t.Error("the outcome was not recorded once the disk had room again")
			}
			if len(f.dials) != 0 {
				t.Errorf("the proxy dialled %q", f.dials)
			}
			d.release()
			f.verify(t)
			testutil.CheckNoSandboxLeft(t, res.RunID)
		})
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the upstream was reached %d times", n)
	}
}

func hasOutcome(evs []audit.Event) bool {
	for _, ev := range evs {
		if ev.Kind == audit.KindResource {
			return true
		}
	}
	return false
}

// TestRunRecordsBeforeResult: the records the proxy makes as it stops (a
// count of the refusals it held back, its connections' ends) are written
// before the run's outcome, so that they are in its result, and a failure
// to write them fails the run. The disk fills once the teardown is
// written: nothing is recorded after it. Before, the proxy stopped after
// the result was made: the count of 5 malformed requests was left out of
// it, and, written after the teardown on a full disk, lost without a word
// (exit 0).
func TestRunRecordsBeforeResult(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.SmallTmpfs(t, 64<<10)
	f := newFixtureIn(t, dir, fmt.Sprintf(fullDiskPolicy, 1), nil)
	d := &diskFiller{t: t, dir: dir, f: f}
	defer d.release()
	f.after = func(ev audit.Event) {
		if ev.Context.Event == audit.EventSandboxTornDown {
			d.fill()
		}
	}
	// 15 malformed CONNECT requests: the proxy records 10 and holds the
	// rest, to count them, for a second or until it stops.
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Task: "up",
		Command: sandbox.SelfPath, Args: []string{"payload", "connect-flood", "15", "a b:1"}})
	if err != nil || res.ExitCode != 0 || res.AuditError != "" {
		t.Fatalf("exit %d, auditError %q, error %v", res.ExitCode, res.AuditError, err)
	}
	counted := 0
	for _, e := range res.Egress {
		if strings.HasPrefix(e.Reason, "5 refusals like this one") {
			counted++
		}
	}
	if len(res.Egress) != 11 || counted != 1 {
		t.Errorf("the result's egress has %d entries, %d of them the count of 5: %+v", len(res.Egress), counted, res.Egress)
	}
	d.release()
	counted = 0
	for _, ev := range f.events(res.RunID) {
		if ev.Kind == audit.KindEgress && strings.HasPrefix(ev.Reason, "5 refusals like this one") {
			counted++
		}
	}
	if counted != 1 {
		t.Errorf("the log has %d records of the count of 5 refusals", counted)
	}
	f.verify(t)
}
