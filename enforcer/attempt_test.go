package enforcer_test

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// onePathPolicy has a command of each fate: run (exit 3), denied,
// escalated with no approval path, and allowed but not installed.
const onePathPolicy = `{
  "toolScopes": {
    "shell": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c", "exit 3"]]},
                        {"name": "gone", "command": "airlock-no-such-command", "argPatterns": [[]]}],
              "deny": [{"name": "no-rm", "command": "rm", "allowExtraArgs": true, "justification": "use git"}],
              "escalate": [{"name": "ask", "command": "sh", "argPatterns": [["-c", "echo ask"]]}]}
  },
  "egress": {"default": "deny", "taskAllowlist": {}}
}`

// TestRunAndStepTakeOnePath: a run and a session's step of the same
// command end the same way, whatever its fate (run, denied, escalated
// with no approval path, not installed): the same exit status, decision,
// refusal and error, and the same records of the command itself (the
// run's own launch and teardown aside, which a session records once).
func TestRunAndStepTakeOnePath(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixtureWith(t, onePathPolicy, false, nil)
	ctx := context.Background()
	s := openSession(t, f, enforcer.SessionRequest{})
	records := func(evs []audit.Event, step string) []string {
		var out []string
		for _, ev := range evs {
			if ev.Context.Details["step"] != step || ev.Context.Event == audit.EventSandboxLaunched || ev.Context.Event == audit.EventSandboxTornDown {
				continue
			}
			out = append(out, string(ev.Kind)+":"+ev.Decision+":"+ev.Context.Event)
		}
		return out
	}
	for i, c := range []struct {
		args []string
		exit int
	}{
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"rm", "-rf", "."}, enforcer.ExitDenied},
		{[]string{"sh", "-c", "echo ask"}, enforcer.ExitEscalated},
		{[]string{"airlock-no-such-command"}, enforcer.ExitNotFound},
	} {
		run, runErr := f.enf.Run(ctx, enforcer.Request{Tool: "shell", Command: c.args[0], Args: c.args[1:]})
		step, stepErr := s.Exec(ctx, enforcer.StepRequest{Tool: "shell", Command: c.args[0], Args: c.args[1:]})
		checkResult(t, run)
		checkResult(t, step)
		if run.ExitCode != c.exit || step.ExitCode != c.exit {
			t.Errorf("%q: run exit %d, step exit %d, want %d", c.args, run.ExitCode, step.ExitCode, c.exit)
		}
		if (runErr == nil) != (stepErr == nil) || run.Error != step.Error || run.Decision != step.Decision || run.Reason != step.Reason ||
			!reflect.DeepEqual(run.Refusal, step.Refusal) {
			t.Errorf("%q: run and step differ:\n run %+v (%v)\nstep %+v (%v)", c.args, run, runErr, step, stepErr)
		}
		got, want := records(f.events(s.ID()), strconv.Itoa(i+1)), records(f.events(run.RunID), "")
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%q: step's records %q, run's %q", c.args, got, want)
		}
	}
	closeAll(t, s)
	f.verify(t)
}
