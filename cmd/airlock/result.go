package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
)

// resultFlags are the result contract's flags of `run` and `session
// exec` (docs/result.md).
type resultFlags struct {
	json   bool
	result string
}

func (f *resultFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.json, "json", false, "capture the child's output and print one result object on stdout")
	cmd.Flags().StringVar(&f.result, "result", "", "write the result object to this file (- for stdout)")
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
	reportOutcome(cmd.ErrOrStderr(), res, err)
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
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if f.json || f.result == "-" {
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	}
	if f.result != "" && f.result != "-" {
		return hostfile.WriteFile(f.result, b, 0o644)
	}
	return nil
}

// reportOutcome prints the one stderr line docs/result.md gives for every
// refusal, kill and setup failure.
func reportOutcome(w io.Writer, res enforcer.Result, err error) {
	switch {
	case err != nil && (res.ExitCode == enforcer.ExitSetup || res.ExitCode == enforcer.ExitNotFound):
		fmt.Fprintf(w, "airlock: setup: error: %v\n", err)
	case res.Refusal != nil:
		fmt.Fprintln(w, refusalLine(res.Refusal))
	case res.KilledBy != nil:
		fmt.Fprintf(w, "airlock: resource: kill: %s\n", res.KillReason)
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
