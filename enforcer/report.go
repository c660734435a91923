package enforcer

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// Report is how the outcome of a run or a session's step is told to its
// caller (docs/result.md): the result object (JSON, Result) and the one
// stderr line of a refusal, kill or failure. `airlock run` and a
// session's holder, for `airlock session exec`, tell it alike.
type Report struct {
	// JSON captures the child's output into the result and prints the
	// result on stdout.
	JSON bool
	// Result is a file the result is written to too ("-": stdout).
	Result string
	// Quiet prints none of airlock's own lines on stderr but errors.
	Quiet bool
}

// Capture replaces the child's stdout and stderr with bounded captures
// when o.JSON asks for them, and returns what puts them into the result.
func (o Report) Capture(stdout, stderr *io.Writer) func(*Result) {
	if !o.JSON {
		return func(*Result) {}
	}
	out, errs := NewCapture(0), NewCapture(0)
	*stdout, *stderr = out, errs
	return func(res *Result) { res.Stdout, res.Stderr = out.Output(), errs.Output() }
}

// Notices is where airlock's lines during the run go: w, or nowhere when
// o.Quiet.
func (o Report) Notices(w io.Writer) io.Writer {
	if o.Quiet {
		return io.Discard
	}
	return w
}

// Tell writes the result where o says, prints the stderr line of a
// refusal, kill or failure, and returns the exit status, the result's.
// stdout and stderr are airlock's own, escaped for a terminal
// (termtext.Writer).
func (o Report) Tell(stdout, stderr io.Writer, res Result, err error) int {
	werr := o.write(stdout, res)
	report(stderr, res, err, o.Quiet)
	if werr != nil {
		fmt.Fprintf(stderr, "airlock: result: error: %v\n", werr)
	}
	return res.ExitCode
}

// write prints the result on stdout (JSON, Result "-") and to the Result
// file, once each.
func (o Report) write(stdout io.Writer, res Result) error {
	if o.JSON || o.Result == "-" {
		if err := termtext.WriteJSON(stdout, res, "  "); err != nil {
			return err
		}
	}
	if o.Result != "" && o.Result != "-" {
		b, err := termtext.JSON(res, "  ")
		if err != nil {
			return err
		}
		return hostfile.WriteFile(o.Result, b, 0o644)
	}
	return nil
}

// report prints the one stderr line docs/result.md gives for every
// refusal, kill and setup failure; quiet leaves out all but errors.
func report(w io.Writer, res Result, err error, quiet bool) {
	switch {
	case res.ExitCode == ExitUsage && res.Error != "":
		fmt.Fprintf(w, "airlock: %s\n", res.Error) // the request refused: nothing ran
	case CouldNotRun(res.ExitCode) && res.Refusal == nil && err != nil:
		fmt.Fprintf(w, "airlock: setup: error: %v\n", err)
	case CouldNotRun(res.ExitCode) && res.Refusal == nil && res.Error != "":
		fmt.Fprintf(w, "airlock: setup: error: %s\n", res.Error)
	case quiet:
	case res.Refusal != nil:
		fmt.Fprintln(w, refusalLine(res.Refusal))
	case res.KilledBy != nil:
		fmt.Fprintf(w, "airlock: resource: kill: %s\n", res.KillReason)
	case res.Interrupted && res.ExitCode == ExitTerminated:
		fmt.Fprintln(w, "airlock: terminated: the command was sent SIGTERM; the sandbox and every process in it were ended")
	case res.Interrupted:
		fmt.Fprintln(w, "airlock: interrupted: the sandbox and every process in it were ended")
	case err != nil && !errors.Is(err, ErrAudit) && res.ExitCode != ExitFindings:
		fmt.Fprintf(w, "airlock: %v\n", err)
	}
	if res.ExitCode == ExitFindings {
		fmt.Fprintf(w, "airlock: findings: error: %s\n", res.Error)
	}
	if res.AuditError != "" && res.ExitCode != ExitSetup {
		PrintAuditError(w, res.AuditError)
	}
	if res.EscapeSuspected != "" {
		fmt.Fprintf(w, "airlock: sandbox: escape_suspected: %s\n", res.EscapeSuspected)
	}
}

// CouldNotRun reports whether code is one airlock gives a command it
// could not run: 125, 126 (not executable) or 127 (not installed).
func CouldNotRun(code int) bool {
	return code == ExitSetup || code == ExitCannotExec || code == ExitNotFound
}

// PrintAuditError prints the line of a record the audit log refused
// (docs/cli.md, "Audit failures"), escaped: control characters and bytes
// that are not UTF-8 never reach the terminal raw.
func PrintAuditError(w io.Writer, msg string) {
	q := strconv.Quote(msg)
	fmt.Fprintf(w, "airlock: audit: error: %s\n", q[1:len(q)-1])
}

// refusalLine is a refusal as one line: gate, decision and reason, then
// what an agent can do about it.
func refusalLine(r *Refusal) string {
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
