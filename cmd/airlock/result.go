package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// resultFlags are the flags `run` and `session exec` share: the result
// contract's (docs/result.md), the child's environment, working
// directory and wall clock, and how it is stopped.
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

// notices is where airlock's lines during the run go: w, or nowhere with
// --quiet.
func (f *resultFlags) notices(w io.Writer) io.Writer {
	if f.quiet {
		return io.Discard
	}
	return w
}

// childEnv turns --env values into NAME=VALUE, looking up a bare NAME in
// airlock's own environment (as docker run --env NAME does).
// lookup is the environment to look in: os.LookupEnv, or for a quick
// client's command line its own (quick.lookupEnv).
func childEnv(flags []string, lookup func(string) (string, bool)) ([]string, error) {
	env := make([]string, 0, len(flags))
	for _, kv := range flags {
		name, _, hasValue := strings.Cut(kv, "=")
		switch {
		case name == "" || strings.ContainsAny(name, "\x00"):
			return nil, fmt.Errorf("--env %q: want NAME=VALUE or NAME", kv)
		case hasValue:
			env = append(env, kv)
		default:
			v, ok := lookup(name)
			if !ok {
				return nil, fmt.Errorf("--env %s: %s is not set here", name, name)
			}
			env = append(env, name+"="+v)
		}
	}
	return env, nil
}

// capture replaces the child's stdout and stderr with bounded captures
// when --json asks for them, and returns what puts them into the result.
func (f *resultFlags) capture(stdout, stderr *io.Writer) func(*enforcer.Result) {
	if !f.json {
		return func(*enforcer.Result) {}
	}
	out, errs := enforcer.NewCapture(0), enforcer.NewCapture(0)
	*stdout, *stderr = out, errs
	return func(res *enforcer.Result) { res.Stdout, res.Stderr = out.Output(), errs.Output() }
}

// finishResult writes the result where the flags say, prints the stderr
// line of a refusal, kill or failure, and exits with the result's status.
func finishResult(cmd *cobra.Command, f resultFlags, res enforcer.Result, err error) error {
	werr := f.write(cmd.OutOrStdout(), res)
	reportOutcome(cmd.ErrOrStderr(), res, err, f.quiet)
	if werr != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "airlock: result: error: %v\n", werr)
	}
	return &exitError{Code: res.ExitCode}
}

// write prints the result on stdout (--json, --result -) and to the
// --result file, once each.
func (f resultFlags) write(stdout io.Writer, res enforcer.Result) error {
	if !f.json && f.result == "" {
		return nil
	}
	if f.json || f.result == "-" {
		if err := termtext.WriteJSON(stdout, res, "  "); err != nil {
			return err
		}
	}
	if f.result != "" && f.result != "-" {
		b, err := termtext.JSON(res, "  ")
		if err != nil {
			return err
		}
		return hostfile.WriteFile(f.result, b, 0o644)
	}
	return nil
}

// reportOutcome prints the one stderr line docs/result.md gives for every
// refusal, kill and setup failure; quiet leaves out all but errors.
func reportOutcome(w io.Writer, res enforcer.Result, err error, quiet bool) {
	switch {
	case res.ExitCode == enforcer.ExitUsage && res.Error != "":
		fmt.Fprintf(w, "airlock: %s\n", res.Error) // the request refused: nothing ran
	case setupStatus(res.ExitCode) && res.Refusal == nil && err != nil:
		fmt.Fprintf(w, "airlock: setup: error: %v\n", err)
	case setupStatus(res.ExitCode) && res.Refusal == nil && res.Error != "":
		fmt.Fprintf(w, "airlock: setup: error: %s\n", res.Error)
	case quiet:
	case res.Refusal != nil:
		fmt.Fprintln(w, refusalLine(res.Refusal))
	case res.KilledBy != nil:
		fmt.Fprintf(w, "airlock: resource: kill: %s\n", res.KillReason)
	case res.Interrupted && res.ExitCode == exitTerminated:
		fmt.Fprintln(w, "airlock: terminated: the command was sent SIGTERM; the sandbox and every process in it were ended")
	case res.Interrupted:
		fmt.Fprintln(w, "airlock: interrupted: the sandbox and every process in it were ended")
	case err != nil && !errors.Is(err, enforcer.ErrAudit) && res.ExitCode != enforcer.ExitFindings:
		fmt.Fprintf(w, "airlock: %v\n", err)
	}
	if res.ExitCode == enforcer.ExitFindings {
		fmt.Fprintf(w, "airlock: findings: error: %s\n", res.Error)
	}
	if res.AuditError != "" && res.ExitCode != enforcer.ExitSetup {
		printAuditError(w, res.AuditError)
	}
	if res.EscapeSuspected != "" {
		fmt.Fprintf(w, "airlock: sandbox: escape_suspected: %s\n", res.EscapeSuspected)
	}
}

// setupStatus reports whether code is one airlock gives a command it
// could not run: 125, 126 (not executable) or 127 (not installed).
func setupStatus(code int) bool {
	return code == enforcer.ExitSetup || code == enforcer.ExitCannotExec || code == enforcer.ExitNotFound
}

// refusalLine is a refusal as one line: gate, decision and reason, then
// what an agent can do about it.
func refusalLine(r *enforcer.Refusal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "airlock: %s: %s: %s", r.Gate, r.Decision, r.Reason)
	if r.Justification != "" {
		fmt.Fprintf(&b, " (the policy says: %s)", r.Justification)
	}
	if len(r.AllowedSignatures) > 0 {
		b.WriteString("; allowed:")
		for i, s := range r.AllowedSignatures {
			if i > 0 {
				b.WriteString(" |")
			}
			fmt.Fprintf(&b, " %q", s.Command)
			for _, a := range s.Args {
				fmt.Fprintf(&b, " %q", a)
			}
			if s.ExtraArgs {
				b.WriteString(" ...")
			}
		}
	}
	if r.Approval != nil {
		b.WriteString("; " + r.Approval.How)
	}
	return b.String()
}
