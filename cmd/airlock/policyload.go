package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/policy"
)

// policyFlag gives cmd, a command that reads a policy, its --policy flag.
// Only such commands have one: a --policy that a command would ignore is
// a usage error, not a silent no-op.
func policyFlag(cmd *cobra.Command) {
	cmd.Flags().String("policy", "", "policy file (default: $AIRLOCK_POLICY, else the embedded default; "+
		"./policy.json is never read unless named)")
}

// loadPolicy loads the policy named by --policy, else $AIRLOCK_POLICY,
// else the embedded default (docs/policy.md, "Where the policy comes
// from"). When that is the embedded default and the working directory
// holds a policy.json, it says on stderr that the file was not read.
func loadPolicy(cmd *cobra.Command) (*policy.Loaded, error) {
	file, _ := cmd.Flags().GetString("policy")
	if file == "" && cmd.Flags().Changed("policy") {
		return nil, usageError{errors.New("--policy needs a file name")}
	}
	l, err := policy.Find(file)
	if err != nil {
		return nil, err
	}
	if n := policy.Unread(l); n != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "airlock: note: %s\n", n)
	}
	return l, nil
}
