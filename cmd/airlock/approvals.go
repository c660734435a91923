package main

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/enforcer"
)

// approvalOptions gives an Enforcer the command line's approval path: the
// per-user approval store that `airlock approve` answers and `--approval
// ID` redeems (docs/approvals.md). The store's directory goes into
// opts.Hide, so that no sandbox sees it, not even in a workspace copy.
// The policy's decider, when it names one, is the Enforcer's own.
func approvalOptions(opts *enforcer.Options) error {
	dir, err := approval.DefaultDir()
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	st, err := approval.OpenStore(dir)
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	opts.Approvals = st
	opts.Hide = append(opts.Hide, dir)
	return nil
}
