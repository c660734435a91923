// Package policyflag is the --policy flag of every command that reads a
// policy, in airlock and in airlock-export alike: one flag, one help
// text, one way to load (docs/policy.md, "Where the policy comes from").
// A command without the flag reads no policy; Load refuses to run for
// one, so that a command cannot silently take the default where its
// caller named a file.
package policyflag

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/policy"
)

// Help is the flag's help text.
const Help = "policy file (default: $AIRLOCK_POLICY, else the embedded default; ./policy.json is never read unless named)"

// ErrNoName is Load's error for --policy given an empty name: a mistake
// in the command line.
var ErrNoName = errors.New("--policy needs a file name")

// Add gives cmd, a command that reads a policy, its --policy flag. Only
// such commands have one: a --policy that a command would ignore is a
// usage error, not a silent no-op.
func Add(cmd *cobra.Command) {
	cmd.Flags().String("policy", "", Help)
}

// Load loads the policy named by cmd's --policy, else $AIRLOCK_POLICY,
// else the embedded default (policy.Find). When that is the embedded
// default and the working directory holds a policy.json, it says on
// cmd's stderr that the file was not read.
func Load(cmd *cobra.Command) (*policy.Loaded, error) {
	f := cmd.Flags().Lookup("policy")
	if f == nil {
		return nil, fmt.Errorf("%s reads a policy but has no --policy flag", cmd.CommandPath())
	}
	if f.Value.String() == "" && f.Changed {
		return nil, ErrNoName
	}
	l, err := policy.Find(f.Value.String())
	if err != nil {
		return nil, err
	}
	if n := policy.Unread(l); n != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "airlock: note: %s\n", n)
	}
	return l, nil
}
