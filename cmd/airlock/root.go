package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses shared by the commands (PRODUCT.md, "Command line").
const (
	exitOK      = 0
	exitFailed  = 1   // a check failed (policy check, audit verify, demo, selftest)
	exitUsage   = 2   // bad flags or arguments
	exitGate    = 126 // run: the command gate denied or escalated
	exitSetup   = 125 // run: airlock itself could not run the command
	exitSignal0 = 128 // run: 128+N when the child died of signal N
)

// exitError carries a specific exit status out of a command. A nil Err
// means the command already printed what it had to say.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

// usageError marks a mistake in the command line itself.
type usageError struct{ error }

// Main runs the airlock command line with args and returns the exit status.
func Main(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(os.Stderr, "airlock: %v\n", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(os.Stderr, "airlock: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ") {
		return exitUsage
	}
	return exitFailed
}

// globalFlags are the flags every command shares.
type globalFlags struct {
	policyFile string
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "airlock",
		Short: "Sandbox policy enforcer for AI agents' commands",
		Long: `airlock decides, deterministically and with a reason, whether an agent's tool
may run a command; runs allowed commands in a Linux sandbox with hard caps and
an egress proxy as the only way out; and records every decision in a
hash-chained audit stream.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&g.policyFile, "policy", "",
		"policy file (default: $AIRLOCK_POLICY, else ./policy.json, else the embedded default)")
	root.AddCommand(
		// Commands are registered here, one constructor per file.
		newExplainCmd(),
		newPolicyCmd(),
		newRunCmd(),
		newPayloadCmd(),
		newDemoCmd(),
		newDoctorCmd(),
		newAuditCmd(),
		newImageCmd(),
		newProxyCmd(),
		newSelftestCmd(),
		newLaunchCmd(),
		newApproveCmd(),
		newExportCmd(),
	)
	strictUsage(root)
	return root
}

// cmdPath is the command's path without the leading "airlock".
func cmdPath(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// strictUsage makes every mistake in a command line exit 2: a wrong number
// of arguments, and an unknown subcommand of a command that only groups
// others (cobra would print the help and exit 0, so a typo in a CI check,
// "airlock policy chek", would pass).
func strictUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			var ue usageError
			if err != nil && !errors.As(err, &ue) {
				return usageError{fmt.Errorf("%s: %w", cmdPath(cmd), err)}
			}
			return err
		}
	}
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil && c.Parent() != nil {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("%s: name a subcommand (see airlock %[1]s --help)", cmdPath(cmd))}
			}
			return usageError{fmt.Errorf("%s: unknown subcommand %q (see airlock %[1]s --help)", cmdPath(cmd), args[0])}
		}
	}
	for _, sub := range c.Commands() {
		strictUsage(sub)
	}
}
