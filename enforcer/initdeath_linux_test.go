package enforcer_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
	"github.com/airlock-sandbox/airlock/sandbox/holes"
)

// TestInitDeathIsEscape kills a run's init from the host while its
// command runs, as a crash would end it: the run exits ExitEscape with
// EscapeSuspected set and escape_suspected recorded, not as a cap's 137.
func TestInitDeathIsEscape(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t, nil)
	go func() {
		// Once the init has forked the target (it is past the release):
		// a child running the payload, not a start-up probe's.
		for range 400 {
			time.Sleep(25 * time.Millisecond)
			pid := childInit()
			kids, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
			for _, kid := range strings.Fields(string(kids)) {
				if cmd, _ := os.ReadFile("/proc/" + kid + "/cmdline"); pid > 0 && bytes.Contains(cmd, []byte("payload\x00sleep")) {
					syscall.Kill(pid, syscall.SIGKILL)
					return
				}
			}
		}
	}()
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != enforcer.ExitEscape || res.KilledBy != nil || !strings.Contains(res.EscapeSuspected, "init died of signal 9") {
		t.Fatalf("result %+v", res)
	}
	var seen bool
	for _, ev := range f.events(res.RunID) {
		seen = seen || ev.Context.Event == audit.EventEscapeSuspected
	}
	if !seen {
		t.Error("no escape_suspected event")
	}
}

// childInit returns the pid of a sandbox init that is a child of this
// process, 0 if there is none.
func childInit() int {
	me := strconv.Itoa(os.Getpid())
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + p.Name() + "/stat")
		cmdline, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		// "pid (comm) state ppid ...": comm may hold spaces and ')'.
		i := bytes.LastIndexByte(stat, ')')
		if f := strings.Fields(string(stat[i+1:])); i > 0 && len(f) > 1 && f[1] == me &&
			bytes.HasPrefix(cmdline, []byte("airlock-sandbox-init\x00")) {
			return pid
		}
	}
	return 0
}

// TestInitDeathBeforeStartedIsEscape kills a run's init from the host
// once it has forked the command and before it says so (test hole
// init-stalls holds it there): the command may have run, so the death is
// an escape signal as any other (ExitEscape), not a failed setup (it was
// ExitSetup: Release took the init's silence for a start that failed).
func TestInitDeathBeforeStartedIsEscape(t *testing.T) {
	testutil.RequireRoot(t)
	holes.Open(t, holes.InitStalls)
	f := newFixture(t, nil)
	go func() {
		for range 400 {
			time.Sleep(25 * time.Millisecond)
			pid := childInit()
			if kids, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children"); pid > 0 && len(bytes.TrimSpace(kids)) > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
				return
			}
		}
	}()
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath, Args: []string{"payload", "sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != enforcer.ExitEscape || !strings.Contains(res.EscapeSuspected, "init died of signal 9") {
		t.Fatalf("result %+v", res)
	}
}
