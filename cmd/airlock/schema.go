package main

import (
	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/policy"
)

func newSchemaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of airlock's files and results",
	}
	for _, s := range []struct {
		name, short string
		schema      func() []byte
	}{
		{"result", "Print the JSON Schema of a run's or step's result (--json, --result; docs/result.md)", enforcer.ResultSchema},
		{"policy", "Print the JSON Schema of a policy file", policy.Schema},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   s.name,
			Short: s.short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				_, err := cmd.OutOrStdout().Write(s.schema())
				return err
			},
		})
	}
	return cmd
}
