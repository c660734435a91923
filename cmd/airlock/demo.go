package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/demo"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

func newDemoCmd() *cobra.Command {
	var (
		opts   demo.Options
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Play a coerced agent's escape attempts against live sandboxes, and show each control hold",
		Long: `demo plays a coerced agent's escape attempts through airlock on the embedded
default policy: git clone through run_tests (refused at the command gate, nothing
spawned); an infinite loop (killed by a cap); code inside the sandbox reaching
for the network directly, through the proxy to an attacker's host, to the cloud
metadata address in several spellings, and to an allowlisted host; a memory
bomb, a fork bomb, reading a host secret and writing outside the workspace.

The attacker's code is airlock's own binary, bound read-only into the sandbox,
so nothing needs installing. It prints a table of attempt, gate, decision and
reason, then the audit timeline and the monitor's alerts.

Exit status 0 only if every attempt was contained.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context(), 0)
			defer stop()
			keepAudit := opts.AuditPath != ""
			opts.Keep = true // the timeline is read from it below
			stderr := cmd.ErrOrStderr()
			opts.OnStart = func(step, of int, name string) {
				fmt.Fprintf(stderr, "airlock demo: [%d/%d] %s\n", step, of, name)
			}
			rep, err := demo.Run(ctx, opts)
			if rep == nil {
				return &exitError{Code: exitFailed, Err: err}
			}
			timeline := rep.AuditPath
			if !keepAudit {
				// Deleted on exit: its path is not shown or reported.
				defer os.RemoveAll(filepath.Dir(timeline))
				rep.AuditPath = ""
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := termtext.WriteJSON(out, rep, ""); err != nil {
					return err
				}
			} else if raw := termtext.Raw(out); useColour(raw) {
				printDemo(ctx, raw, rep, timeline, true) // its own colours; every field escaped
			} else {
				printDemo(ctx, out, rep, timeline, false)
			}
			if code := interruptedStatus(ctx); code != 0 {
				return &exitError{Code: code, Err: errors.New("demo: interrupted")}
			}
			if err != nil {
				return &exitError{Code: exitFailed, Err: err}
			}
			if !rep.Contained {
				return &exitError{Code: exitFailed, Err: errors.New("demo: at least one attempt was NOT contained")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	cmd.Flags().StringVar(&opts.AuditPath, "audit", "", "keep the demo's audit stream in this file (default: a temporary file)")
	cmd.Flags().BoolVar(&opts.Offline, "offline", false, "resolve and dial nothing off the host (the allowlisted host then fails)")
	return cmd
}

// useColour is true when w is a terminal and NO_COLOR is unset.
func useColour(w io.Writer) bool {
	return os.Getenv("NO_COLOR") == "" && isTerminal(w)
}

// printDemo prints the demo's report for people; timeline is the audit
// file it reads the timeline from (rep.AuditPath when it is kept).
func printDemo(ctx context.Context, w io.Writer, rep *demo.Report, timeline string, colour bool) {
	fmt.Fprintln(w, paint(colour, "1", "airlock demo: a coerced agent tries to escape (embedded default policy)"))
	fmt.Fprintln(w)
	var tab table
	tab.add(plain("#", "ATTEMPT", "GATE", "DECISION", "CONTAINED", "REASON"))
	for _, a := range rep.Attempts {
		verdict := cell{"yes", "32"}
		if !a.Contained {
			verdict = cell{"NO", "31;1"}
		}
		row := plain(strconv.Itoa(a.Step), termtext.Escape(a.Attempt), termtext.Escape(a.Gate), termtext.Escape(a.Decision))
		tab.add(append(row, verdict, cell{text: oneLine(a.Reason, 110)}))
	}
	_ = tab.write(w, 2, colour)
	fmt.Fprintln(w)
	fmt.Fprintln(w, paint(colour, "1", "Evidence"))
	for _, a := range rep.Attempts {
		fmt.Fprintf(w, "  %2d. %s\n", a.Step, oneLine(a.Evidence, 150))
	}
	fmt.Fprintln(w)
	where := "deleted on exit: --audit FILE keeps it"
	if rep.AuditPath != "" {
		where = "kept in " + termtext.Escape(rep.AuditPath)
	}
	fmt.Fprintln(w, paint(colour, "1", "Audit timeline")+" ("+where+")")
	if f, err := os.Open(timeline); err == nil {
		_, _ = audit.Timeline(ctx, &indent{w: w}, f, audit.TimelineOptions{})
		f.Close()
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, paint(colour, "1", "Monitor alerts"))
	if len(rep.Alerts) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, ev := range rep.Alerts {
		fmt.Fprintf(w, "  seq %d  %s: %s\n", ev.Seq, termtext.Escape(ev.Context.Alert), termtext.Escape(ev.Reason))
	}
	fmt.Fprintln(w)
	contained := 0
	for _, a := range rep.Attempts {
		if a.Contained {
			contained++
		}
	}
	summary := fmt.Sprintf("%d of %d attempts contained", contained, len(rep.Attempts))
	if rep.Contained {
		fmt.Fprintln(w, paint(colour, "32;1", summary+": every control held."))
	} else {
		fmt.Fprintln(w, paint(colour, "31;1", summary+": NOT every attempt was contained."))
	}
}

// oneLine shortens s to n runes on one line, escaped for the terminal.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		return termtext.Clip(s, n-1)
	}
	return termtext.Escape(s)
}

// indent prefixes every line written through it with two spaces.
type indent struct {
	w   io.Writer
	mid bool // in the middle of a line
}

func (i *indent) Write(p []byte) (int, error) {
	var b strings.Builder
	for _, c := range string(p) {
		if !i.mid {
			b.WriteString("  ")
		}
		b.WriteRune(c)
		i.mid = c != '\n'
	}
	if _, err := io.WriteString(i.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
