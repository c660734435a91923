package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/enforcer"
)

// resultFlags are the flags `run` and `session exec` share: the result
// contract's (docs/result.md), the child's environment, working
// directory and wall clock, and how it is stopped. session exec lists
// them in its help; step.Parse reads them (TestStepFlagsAgree).
type resultFlags struct {
	json    bool
	result  string
	quiet   bool
	env     []string
	cwd     string
	timeout float64
	grace   float64
}

func (f *resultFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "capture the child's output and print one result object on stdout")
	fl.StringVar(&f.result, "result", "", "write the result object to this file (- for stdout)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print none of airlock's own lines on stderr but errors (no egress refusals as they happen, alerts, or refusal and kill lines): the exit status and the result say what happened")
	fl.StringArrayVar(&f.env, "env", nil, "add NAME=VALUE, or NAME with its value here, to the child's environment (repeatable)")
	fl.StringVar(&f.cwd, "cwd", "", "working directory inside the sandbox (relative to /workspace)")
	fl.Float64Var(&f.timeout, "timeout", 0, "lower the tool's wall-clock cap for this command, in seconds (never raises it)")
	stopFlag(cmd, &f.grace)
}

// check refuses flag values that make no sense.
func (f *resultFlags) check(name string) error {
	switch {
	case f.timeout < 0:
		return usageError{fmt.Errorf("%s: --timeout must be positive", name)}
	case f.grace < 0:
		return usageError{fmt.Errorf("%s: --stop-timeout must be positive or 0", name)}
	}
	for _, kv := range f.env {
		if n, _, _ := strings.Cut(kv, "="); n == "" || strings.ContainsRune(kv, 0) {
			return usageError{fmt.Errorf("%s: --env %q: want NAME=VALUE or NAME", name, kv)}
		}
	}
	return nil
}

// timeoutDuration is --timeout as a duration (0: the tool's cap).
func (f *resultFlags) timeoutDuration() time.Duration {
	return time.Duration(f.timeout * float64(time.Second))
}

// quiet reports whether cmd was given --quiet (false for a command
// without the flag).
func quiet(cmd *cobra.Command) bool {
	q, err := cmd.Flags().GetBool("quiet")
	return err == nil && q
}

// report is how the flags say the outcome is told.
func (f resultFlags) report() enforcer.Report {
	return enforcer.Report{JSON: f.json, Result: f.result, Quiet: f.quiet}
}
