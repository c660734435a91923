package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/authoring"
)

// exitWider is policy diff's status when NEW allows what OLD does not
// (docs/cli.md): neither a failed check (1) nor a usage error (2), so a
// CI gate can tell a widening from a broken file.
const exitWider = 3

func newPolicyDiffCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff OLD NEW [--json]",
		Short: "Name everything NEW allows that OLD does not, and what it narrows; exit 3 when it allows more",
		Long: `diff compares two policies by asking their own gates, and names each thing NEW
allows that OLD does not, in a fixed vocabulary (docs/policy.md, "Reviewing a
change"): new-tool, new-command, shell-rule, workspace-program,
wider-signature, deny-dropped, escalation-dropped, new-host, new-wildcard,
private-reach, inspection-dropped, new-method, new-path, credential-widened,
cap-raised, budget-raised, require-dropped, weaker-mode, filesystem-widened,
search-path, block-dropped, approval-decider; then what it narrows, in the
same words. The files are read as data: they decide nothing here, so they
need not pass the checks of where a policy may come from, and - reads one
from stdin (git show main:policy.yaml | airlock policy diff - policy.yaml).

Exit status 0 when NEW allows nothing OLD does not, 3 when it does, 1 when
a file does not load.`,
		Example: `  git show main:policy.yaml | airlock policy diff - policy.yaml`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) != 2:
				return usageError{errors.New("policy diff: give OLD and NEW")}
			case args[0] == "-" && args[1] == "-":
				return usageError{errors.New("policy diff: only one of OLD and NEW can be - (stdin)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			old, err := readPolicyData(cmd.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			new, err := readPolicyData(cmd.InOrStdin(), args[1])
			if err != nil {
				return err
			}
			d, err := authoring.Diff(old.Policy, new.Policy)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				d.Widens, d.Narrows = orEmpty(d.Widens), orEmpty(d.Narrows)
				err = termtext.WriteJSON(w, struct {
					Old policy.Info `json:"old"`
					New policy.Info `json:"new"`
					*authoring.Difference
				}{old.Info(), new.Info(), d}, "")
			} else {
				err = printDiff(w, d)
			}
			if err != nil {
				return err
			}
			if len(d.Widens) > 0 {
				return &exitError{Code: exitWider}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"old","new","widens","narrows"} as one JSON object`)
	return cmd
}

// readPolicyData reads and parses a policy file as data, or stdin for
// "-": a regular file, opened without blocking.
func readPolicyData(stdin io.Reader, name string) (*policy.Loaded, error) {
	if name != "-" {
		data, err := hostfile.ReadFile(name, policy.MaxSize)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		return policy.Parse(name, data)
	}
	data, err := io.ReadAll(io.LimitReader(stdin, policy.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("policy: %s: %w", name, err)
	}
	return policy.Parse("<stdin>", data)
}

func printDiff(w io.Writer, d *authoring.Difference) error {
	section := func(head string, cs []authoring.Change) {
		fmt.Fprintln(w, head)
		t := &table{}
		for _, c := range cs {
			t.add(plain("  "+c.Kind, c.Subject+":", c.What))
		}
		_ = t.write(w, 2, false)
	}
	if len(d.Widens) == 0 {
		fmt.Fprintln(w, "NEW allows nothing that OLD does not.")
	} else {
		section("widens (NEW allows what OLD does not):", d.Widens)
	}
	if len(d.Narrows) > 0 {
		section("narrows (OLD allows what NEW does not):", d.Narrows)
	}
	return nil
}
