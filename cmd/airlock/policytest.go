package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/authoring"
)

func newPolicyTestCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test FILE [CASES] [--json]",
		Short: "Decide a policy's examples and a file of test cases; exit 1 on any the policy decides otherwise",
		Long: `test loads the policy FILE as policy check does, then asks its own gates to
decide every example its rules and allowlist entries carry and, with CASES,
every line of that file: "DECISION NAME WHAT", where DECISION is allow, deny
or escalate, NAME a tool or a task (tool:NAME or task:NAME where the policy
has both), and WHAT a command line (words as a shell reads them, nothing
expanded), a HOST[:PORT] or a request "METHOD URL" (docs/policy.md, "Test
cases"). It prints one row each: whether it passed, where it is, what it
wants, what the policy decides.

Exit status 0 when every example and case passes, 1 when one does not or
the policy or the cases file will not load.`,
		Example: `  airlock policy test policy.yaml policy.cases`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageError{fmt.Errorf("policy test: give FILE and at most one CASES file")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := policy.Load(args[0])
			if err != nil {
				return err
			}
			outs, err := authoring.Examples(l)
			if err != nil {
				return err
			}
			if len(args) == 2 {
				cases, err := readCases(args[1], l.Policy)
				if err != nil {
					return err
				}
				more, err := authoring.Cases(l, args[1], cases)
				if err != nil {
					return err
				}
				outs = append(outs, more...)
			}
			failed := 0
			for _, o := range outs {
				if !o.OK {
					failed++
				}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := termtext.WriteJSON(w, struct {
					Policy   policy.Info         `json:"policy"`
					Outcomes []authoring.Outcome `json:"outcomes"`
					Passed   int                 `json:"passed"`
					Failed   int                 `json:"failed"`
				}{l.Info(), orEmpty(outs), len(outs) - failed, failed}, ""); err != nil {
					return err
				}
			} else if err := printOutcomes(w, outs, failed); err != nil {
				return err
			}
			if failed > 0 {
				return &exitError{Code: exitFailed, Err: fmt.Errorf("policy test: %s: %d of %d examples and cases are decided otherwise", l.Source, failed, len(outs))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"policy","outcomes","passed","failed"} as one JSON object`)
	return cmd
}

// readCases reads and parses a cases file, opened without blocking (a
// FIFO is refused).
func readCases(name string, p *policy.Policy) ([]authoring.Case, error) {
	data, err := hostfile.ReadFile(name, authoring.MaxCasesSize)
	if err != nil {
		return nil, fmt.Errorf("policy test: %w", err)
	}
	return authoring.ParseCases(name, data, p)
}

// printOutcomes prints one row per outcome, and the reason of each that
// failed below it.
func printOutcomes(w io.Writer, outs []authoring.Outcome, failed int) error {
	t := &table{}
	t.add(plain("RESULT", "WHERE", "SUBJECT", "WANT", "GOT", "WHAT"))
	for _, o := range outs {
		result := cell{text: "ok", colour: "32"}
		if !o.OK {
			result = cell{text: "FAIL", colour: "31;1"}
		}
		t.add(append([]cell{result}, plain(termtext.Escape(o.Where), o.Subject, o.Want, o.Got, o.What)...))
		if !o.OK {
			t.add(plain("", "", "", "", "", "reason: "+o.Reason))
		}
	}
	if err := t.write(w, 2, useColour(w)); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d passed, %d failed\n", len(outs)-failed, failed)
	return err
}
