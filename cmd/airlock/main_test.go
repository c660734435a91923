package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestMain lets the test binary act as the airlock command inside
// testscript scripts, as the sandbox init when airlock re-executes it, and
// as airlock's payloads inside a sandbox.
func TestMain(m *testing.M) {
	sandbox.Init()
	// Inside a sandbox the binary runs as sandbox.SelfPath (the demo's and
	// the self-test's payloads): act as airlock there too.
	if os.Args[0] == sandbox.SelfPath {
		os.Exit(Main(os.Args[1:]))
	}
	testscript.Main(m, map[string]func(){
		"airlock": func() { os.Exit(Main(os.Args[1:])) },
	})
}

// TestScripts runs the command-line scripts in testdata/script, one file
// per feature, in the style of age and the go command.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			// Scripts must not pick up a policy or audit log from the host.
			env.Setenv("AIRLOCK_POLICY", "")
			env.Setenv("AIRLOCK_REPO", repo)
			env.Setenv("AIRLOCK_AUDIT", env.WorkDir+"/audit.jsonl")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			env.Setenv("NO_COLOR", "1")
			// A private runtime directory for session holders, a fresh
			// session id ($SES), and no holder left when the script ends.
			run := env.WorkDir + "/run"
			env.Setenv("XDG_RUNTIME_DIR", run)
			env.Setenv("SES", enforcer.NewSessionID())
			// Children that trap SIGTERM or ignore it (signals.txtar).
			env.Setenv("TRAP", "trap 'echo trapped > /findings/t; exit 0' TERM; echo ready; while :; do sleep 0.05; done")
			env.Setenv("IGNORE", "trap '' TERM; echo ready; while :; do sleep 0.05; done")
			env.Defer(func() { stopHolders(run + "/airlock") })
			return os.Mkdir(run, 0o700)
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			}
			return false, nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitproc":      cmdWaitProc,
			"nocgroups":     cmdNoCgroups,
			"nocanaries":    cmdNoStaleCanaries,
			"mkapproval":    cmdMkApproval,
			"redeem":        cmdRedeem,
			"pendingid":     cmdPendingID,
			"validresult":   cmdValidResult,
			"readmeexample": cmdReadmeExample,
			"status":        cmdStatus,
			"readmeline":    cmdReadmeLine,
			"jsonok":        cmdJSONOK,
		},
	})
}

// cmdWaitProc waits up to ten seconds until a process whose command line
// starts with args[0] exists ("waitproc PATTERN"), or, negated, until none
// does ("! waitproc PATTERN").
func cmdWaitProc(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitproc PATTERN")
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if found := len(procsMatching(args[0])) > 0; found != neg {
			return
		}
	}
	if neg {
		ts.Fatalf("processes still alive matching %q: %v", args[0], procsMatching(args[0]))
	}
	ts.Fatalf("no process matching %q appeared", args[0])
}

// cmdNoCgroups fails if a cgroup directory named for any run in the audit
// file args[0] exists ("nocgroups audit.jsonl").
func cmdNoCgroups(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: nocgroups AUDITFILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	runs := map[string]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if ev, err := audit.ParseLine(line); err == nil && ev.Context.RunID != "" {
			runs[ev.Context.RunID] = true
		}
	}
	for run := range runs {
		for _, pattern := range []string{"/sys/fs/cgroup/*/airlock-*" + run, "/sys/fs/cgroup/*/*/*/airlock-*" + run} {
			if m, _ := filepath.Glob(pattern); len(m) > 0 {
				ts.Fatalf("cgroup directories left for %s: %v", run, m)
			}
		}
	}
}

// cmdNoStaleCanaries fails if a start-up probe canary directory is left
// whose owner is gone (its lock is free): a dead airlock's leftover that
// the next run should have swept ("nocanaries").
func cmdNoStaleCanaries(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 0 || neg {
		ts.Fatalf("usage: nocanaries")
	}
	if stale := testutil.StaleCanaries(ts.Getenv("XDG_RUNTIME_DIR")); len(stale) > 0 {
		ts.Fatalf("stale canary directory left: %s", stale[0])
	}
}

// procsMatching lists the pids whose command line starts with pattern.
func procsMatching(pattern string) []int {
	self := os.Getpid()
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(d + "/cmdline")
		if err == nil && bytes.HasPrefix(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), []byte(pattern)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cmdValidResult fails unless the file args[0] holds one result object
// valid against the published result schema ("validresult r.json").
func cmdValidResult(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: validresult FILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	ts.Check(err)
	schema, err := resultSchema()
	ts.Check(err)
	if err := schema.Validate(doc); err != nil {
		ts.Fatalf("%s does not match the result schema: %v", args[0], err)
	}
}

// resultSchema compiles the published result schema once.
var resultSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(enforcer.ResultSchema()))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("result.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("result.schema.json")
})

// cmdReadmeExample writes the README's Python harness example, exactly as
// the README shows it, to args[0] ("readmeexample harness.py").
func cmdReadmeExample(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: readmeexample FILE")
	}
	readme, err := os.ReadFile(filepath.Join(ts.Getenv("AIRLOCK_REPO"), "README.md"))
	ts.Check(err)
	_, section, ok := bytes.Cut(readme, []byte("\n## Driving airlock from an agent harness\n"))
	if !ok {
		ts.Fatalf("README.md has no section \"Driving airlock from an agent harness\"")
	}
	_, code, ok := bytes.Cut(section, []byte("```python\n"))
	code, _, closed := bytes.Cut(code, []byte("```\n"))
	if !ok || !closed {
		ts.Fatalf("the README's harness section has no python block")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), code, 0o644))
}

// stopHolders stops every session whose holder listens in dir.
func stopHolders(dir string) {
	holder.StopPool(dir)
	infos, _ := holder.List(dir)
	for _, i := range infos {
		if c, err := holder.Dial(dir, i.ID); err == nil {
			c.Stop(nil, nil)
		}
	}
}

// cmdStatus runs a command as exec does and fails unless it exits with
// the status args[0] ("status 127 airlock run --tool t -- missing"); its
// stdout and stderr are there for the next commands.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: status CODE CMD [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got, err := 0, ts.Exec(args[1], args[2:]...)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
