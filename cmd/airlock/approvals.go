package main

import (
	"github.com/airlock-sandbox/airlock/enforcer"
)

// approvalOptions gives an Enforcer the command line's approval path:
// the per-user approval store that `airlock approve` answers, and the
// external decider when one is named.
//
// The store and the decider are package approval's (approval.OpenStore
// of approval.DefaultDir, approval.Decider), which land separately; the
// store's directory also goes into opts.Hide, so that no sandbox sees it,
// not even in a workspace copy. Until they land, the command line has no
// approval path, and an escalated command is refused with exit 75 and a
// refusal that says so (docs/sessions.md, "Approvals").
func approvalOptions(opts *enforcer.Options) error {
	_ = opts
	return nil
}
