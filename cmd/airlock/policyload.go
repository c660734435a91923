package main

import (
	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/policy"
)

// loadPolicy loads the policy named by --policy, $AIRLOCK_POLICY,
// ./policy.json or the embedded default, in that order.
func loadPolicy(cmd *cobra.Command) (*policy.Loaded, error) {
	file, _ := cmd.Flags().GetString("policy")
	return policy.Find(file)
}
