package main

import (
	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/payload"
)

// newPayloadCmd is the hidden entry point of the attack programs that the
// demo and the self-test run inside sandboxes, as airlock's own binary.
func newPayloadCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "payload NAME [ARG...]",
		Short:              "Run one of airlock's built-in attack payloads (used inside sandboxes)",
		Hidden:             true,
		DisableFlagParsing: true,
		Args:               cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if code := payload.Run(args[0], args[1:]); code != 0 {
				return &exitError{Code: code}
			}
			return nil
		},
	}
}
