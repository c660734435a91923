package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/policy"
)

// loadPolicy loads the policy of cmd's --policy (policyflag.Load); an
// empty name is a usage error.
func loadPolicy(cmd *cobra.Command) (*policy.Loaded, error) {
	l, err := policyflag.Load(cmd)
	if errors.Is(err, policyflag.ErrNoName) {
		return nil, usageError{err}
	}
	return l, err
}
