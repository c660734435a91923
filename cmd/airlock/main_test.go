package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as the airlock command inside
// testscript scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"airlock": func() { os.Exit(Main(os.Args[1:])) },
	})
}

// TestScripts runs the command-line scripts in testdata/script, one file
// per feature, in the style of age and the go command.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			// Scripts must not pick up a policy or audit log from the host.
			env.Setenv("AIRLOCK_POLICY", "")
			env.Setenv("AIRLOCK_AUDIT", env.WorkDir+"/audit.jsonl")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			env.Setenv("NO_COLOR", "1")
			return nil
		},
	})
}
