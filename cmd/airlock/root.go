package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/holder/step"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// Exit statuses shared by the commands (README.md, "Using it").
const (
	exitOK        = 0
	exitFailed    = 1   // a check failed (policy check, audit verify, demo, selftest)
	exitUsage     = 2   // bad flags or arguments
	exitDenied    = 77  // run, session exec: the command gate denied
	exitEscalated = 75  // run, session exec: escalated, and no approval let it run
	exitSetup     = 125 // run: airlock itself could not run the command
	exitSignal0   = 128 // run: 128+N when the child died of signal N
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
	return mainOn(context.Background(), newRootCmd(), args)
}

// mainOn runs the command line root with args under ctx and returns the
// exit status.
func mainOn(ctx context.Context, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	defer flush(root.OutOrStdout())
	stderr := root.ErrOrStderr()
	defer flush(stderr)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "airlock: %v\n", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(stderr, "airlock: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ") {
		return exitUsage
	}
	return exitFailed
}

// newRootCmd builds the command tree. What the commands print for people
// goes through termtext Writers, so that no name, path or reason an agent
// or the contained code chose can drive the terminal (cobra's own
// messages and help included); the child's output is passed through
// unchanged (termtext.Raw).
func newRootCmd() *cobra.Command {
	return newRootCmdTo(os.Stdout, os.Stderr,
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
		newSchemaCmd(),
		newSessionCmd(),
		newMCPCmd(),
		newExportCmd(),
	)
}

// newRootCmdTo is the root of the command tree cmds, printing to stdout
// and stderr.
func newRootCmdTo(stdout, stderr io.Writer, cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "airlock",
		Short: "Sandbox policy enforcer for AI agents' commands",
		Long: `airlock decides, deterministically and with a reason, whether an agent's tool
may run a command; runs allowed commands in a Linux sandbox with hard caps and
an egress proxy as the only way out; and records every decision in a
hash-chained audit stream.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(termtext.NewWriter(stdout))
	root.SetErr(termtext.NewWriter(stderr))
	// A flag error quotes the argument as typed: escape all of it, new
	// lines too, so that it stays one line.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok && c.Parent() != nil && c.Parent().Name() == "session" {
			msg = step.UnknownFlag(c.Name(), name)
		}
		return usageError{errors.New(termtext.Escape(msg))}
	})
	root.AddCommand(cmds...)
	strictUsage(root)
	return root
}

// childOutput returns where a child's output stream should go, given
// airlock's own stream w: to a terminal through a termtext Writer of its
// own, so that the contained code cannot drive the terminal either; to a
// pipe or a file byte for byte (the output is data). Flush it at the end.
func childOutput(w io.Writer) io.Writer {
	raw := termtext.Raw(w)
	if isTerminal(raw) {
		return termtext.NewWriter(raw)
	}
	return raw
}

// flush writes out what a termtext Writer kept back, if w is one.
func flush(w io.Writer) {
	if t, ok := w.(*termtext.Writer); ok {
		_ = t.Flush()
	}
}

// noArgs refuses any argument, as a usage error of format (which quotes
// the first with %q).
func noArgs(format string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf(format, args[0])}
		}
		return nil
	}
}

// orEmpty is s, or an empty slice for nil: [] in JSON rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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
