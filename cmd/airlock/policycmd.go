package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/authoring"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Check, test, compare a policy file, suggest additions to it, or print its JSON Schema",
	}
	cmd.AddCommand(newPolicyCheckCmd(), newPolicySchemaCmd(), newPolicyTestCmd(), newPolicySuggestCmd(), newPolicyDiffCmd())
	return cmd
}

func newPolicyCheckCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a policy file; report every problem with file:line:col",
		Long: `check parses and validates a policy strictly: an unknown field, a wrong type,
a duplicate key, trailing data or an out-of-range value is an error naming the
file, line and column, with a hint where there is one. FILE must also pass
the checks of where a policy may come from (a regular file that only you or
root can write, in directories only you or root can write: see
docs/policy.md). Without FILE it checks the policy airlock would use
(--policy, else $AIRLOCK_POLICY, else the embedded default). It then asks
the policy's own gates to decide the examples its rules and entries carry,
and fails at the file:line:col of each they decide otherwise. A valid
policy's rules that may not hold as they read are warnings, on stderr,
each at its place: a deny or escalate rule naming a path, for one.

Exit status 0 when the policy is valid and its examples pass, warnings or
not; 1 when not.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{errors.New("policy check: at most one FILE")}
			}
			if len(args) == 1 && cmd.Flags().Changed("policy") {
				return usageError{errors.New("policy check: give FILE or --policy, not both")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var (
				l   *policy.Loaded
				err error
			)
			if len(args) == 1 {
				l, err = policy.Load(args[0])
			} else {
				l, err = loadPolicy(cmd)
			}
			if err != nil {
				return err
			}
			for _, w := range l.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "airlock: warning: %s\n", w)
			}
			n, err := authoring.CheckExamples(l)
			if err != nil {
				return err
			}
			examples := ""
			if n > 0 {
				examples = fmt.Sprintf(", %d examples", n)
			}
			rules := 0
			for _, s := range l.ToolScopes {
				rules += len(s.Allow) + len(s.Escalate) + len(s.Deny)
			}
			tasks := 0
			if l.Egress != nil {
				tasks = len(l.Egress.TaskAllowlist)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: %d tools, %d command rules, %d egress tasks%s (%s)\n",
				l.Source, len(l.ToolScopes), rules, tasks, examples, l.Digest)
			return err
		},
	}
	policyflag.Add(cmd)
	return cmd
}

func newPolicySchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of a policy file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(policy.Schema())
			return err
		},
	}
}
