package enforcer_test

import (
	"context"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// runnerEnv makes the test binary an airlock that runs one long command
// on the audit log it names, and waits (TestMain calls runnerMain).
const runnerEnv = "ENFORCER_TEST_RUNNER"

// runnerMain runs a command that sleeps, on the log at path, with the run
// id id; the test kills it (SIGKILL) while the command runs.
func runnerMain(path, id string) int {
	pol, _ := policy.Parse("test.json", []byte(testPolicy))
	log, err := audit.Open(path)
	if err != nil {
		return 1
	}
	var self sandbox.Config
	self.BindSelf()
	e, err := enforcer.New(pol, log, enforcer.Options{Binds: self.Binds})
	if err != nil {
		return 1
	}
	_, _ = e.Run(context.Background(), enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath,
		Args: []string{"payload", "sleep"}, RunID: id})
	return 0
}
