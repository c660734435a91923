package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/authoring"
)

func newPolicySuggestCmd() *cobra.Command {
	var (
		auditFile, until string
		asJSON, exact    bool
		sel              selection
	)
	cmd := &cobra.Command{
		Use:   "suggest [--policy FILE] [--audit FILE] [--run ID | --session ID | --since T --until T] [--exact] [--json]",
		Short: "Propose the smallest additions to a policy that would have allowed what was refused",
		Long: `suggest reads the refusals in the audit log (its chain verified), selected by
--run, --session, --tool, --kind and --since as audit timeline selects (and
--until, the end of a time window: a duration before now or a time), and
proposes the smallest additions to the policy (--policy, else $AIRLOCK_POLICY,
else the embedded default) that would have allowed them: command rules of
exact command lines (the common prefix of three or more with one first
argument, unless --exact), allowlist entries of exact hosts and ports (a
*.suffix for three or more siblings, said so), rules of exact methods and
paths on inspected entries, and a cap or budget doubled where one killed a
run or was reached. Each carries its records and examples, and a risk note
where one is due. What the built-in floor blocks is never proposed, and
every refusal left out is listed with why.

The changed policy is printed on stdout, in the format it was read in, and
the suggestions on stderr; --json prints the suggestions instead. No file is
written: review the change (airlock policy diff), test it (airlock policy
test), then save it. Exit status 0, 1 when the policy or the log will not do.`,
		Example: `  airlock policy suggest --policy p.yaml --run run-3f2a9c81d0e4 > p2.yaml
  airlock policy diff p.yaml p2.yaml && airlock policy test p2.yaml cases.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter, err := sel.filter("suggest")
			if err != nil {
				return err
			}
			if until != "" {
				if filter.Until, err = parseSince(until, time.Now()); err != nil {
					return usageError{fmt.Errorf("policy suggest: --until: %w", err)}
				}
			}
			pol, err := loadPolicy(cmd)
			if err != nil {
				return err
			}
			file, err := auditPath(auditFile)
			if err != nil {
				return err
			}
			f, _, err := hostfile.Open(file)
			if err != nil {
				return auditFailed("suggest", file, err)
			}
			defer f.Close()
			records, err := authoring.ReadLog(f, filter)
			if err != nil {
				return auditFailed("suggest", file, err)
			}
			got, err := authoring.Suggest(pol, records, authoring.Options{Exact: exact})
			if err != nil {
				return fmt.Errorf("policy suggest: %s: %w", pol.Source, err)
			}
			if asJSON {
				return termtext.WriteJSON(cmd.OutOrStdout(), struct {
					Policy policy.Info `json:"policy"`
					*authoring.Suggested
				}{pol.Info(), got}, "")
			}
			printSuggestions(cmd.ErrOrStderr(), got, len(records))
			if got.Policy == nil {
				return nil
			}
			out := childOutput(cmd.OutOrStdout())
			_, err = out.Write(got.Policy)
			flush(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&auditFile, "audit", "", "audit file (default: $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl)")
	f.StringVar(&until, "until", "", "only events before this long ago (10m, 2h) or this RFC 3339 time")
	f.BoolVar(&exact, "exact", false, "propose exact command lines only, never a common prefix")
	f.BoolVar(&asJSON, "json", false, `print {"policy","suggestions","leftOut"} as one JSON object instead of the changed policy`)
	sel.add(cmd)
	policyflag.Add(cmd)
	return cmd
}

// printSuggestions says on w what was suggested and left out, and why.
func printSuggestions(w io.Writer, got *authoring.Suggested, records int) {
	for _, s := range got.Suggestions {
		fmt.Fprintf(w, "airlock: suggest: %s (records %s)\n", s.Summary, s.Records)
		for _, r := range s.Risks {
			fmt.Fprintf(w, "  risk: %s\n", r)
		}
	}
	for _, l := range got.LeftOut {
		fmt.Fprintf(w, "airlock: suggest: left out: %s: %s (records %s)\n", l.Subject, l.Why, l.Records)
	}
	switch {
	case records == 0:
		fmt.Fprintln(w, "airlock: suggest: the log holds no refusal of this selection: nothing to suggest")
	case got.Policy == nil:
		fmt.Fprintf(w, "airlock: suggest: nothing to suggest from %d records\n", records)
	default:
		fmt.Fprintf(w, "airlock: suggest: %d suggestions from %d records; review them (airlock policy diff), test them (airlock policy test)\n",
			len(got.Suggestions), records)
	}
}
