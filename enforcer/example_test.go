package enforcer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/policy"
)

// An agent's tool calls in one session: what the first command writes is
// there for the second, and a command outside the tool's scope is refused
// with what the agent needs to know, while the session goes on.
func ExampleEnforcer_OpenSession() {
	pol, err := policy.Parse("policy.json", []byte(`{"toolScopes": {
	  "install_deps": {"allow": [{"name": "pip", "command": "sh", "argPatterns": [["-c", "echo left-pad==1.0 > /tmp/site"]]}]},
	  "run_tests":    {"allow": [{"name": "pytest", "command": "cat", "argPatterns": [["/tmp/site"]]}]}}}`))
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "airlock-example-")
	defer os.RemoveAll(dir)
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		panic(err)
	}
	defer log.Close()
	e, err := enforcer.New(pol, log, enforcer.Options{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	s, err := e.OpenSession(ctx, enforcer.SessionRequest{})
	if err != nil {
		panic(err)
	}
	defer s.Close(ctx)
	for _, st := range []enforcer.StepRequest{
		{Tool: "install_deps", Command: "sh", Args: []string{"-c", "echo left-pad==1.0 > /tmp/site"}},
		{Tool: "run_tests", Command: "cat", Args: []string{"/tmp/site"}, Stdout: os.Stdout},
		{Tool: "run_tests", Command: "cat", Args: []string{"/etc/shadow"}},
	} {
		res, err := s.Exec(ctx, st)
		if err != nil {
			panic(err)
		}
		fmt.Printf("step %d: exit %d\n", res.Step, res.ExitCode)
		if r := res.Refusal; r != nil {
			fmt.Printf("  %s (retryable %v; allowed: %v)\n", r.Reason, r.Retryable, r.AllowedSignatures[0].Args)
		}
	}
	// Output:
	// step 1: exit 0
	// left-pad==1.0
	// step 2: exit 0
	// step 3: exit 77
	//   "cat" is in the allowlist of tool "run_tests" but its arguments match no signature: deny by default (retryable false; allowed: [/tmp/site])
}
