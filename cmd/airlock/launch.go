package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/runbook"
)

func newLaunchCmd() *cobra.Command {
	var (
		planFile, auditFile string
		asJSON              bool
		grace               float64
		opts                runbook.Options
	)
	cmd := &cobra.Command{
		Use:   "launch --plan FILE [--workspace DIR] [--findings DIR] [--image PATH@sha256:DIGEST] [--audit FILE] [--evidence DIR] [--json]",
		Short: "Run a test plan in one verified, isolated sandbox (the runbook)",
		Long: `launch runs a test plan the way the runbook says. Every step is decided at
the command gate first: one denied or escalated step refuses the plan. Then one
sandbox starts (on the pinned --image, verified against its digest, or on the
host's system directories, read-only), and start-up probes inside it check
that it holds: non-root uid, no capabilities, no_new_privs, seccomp, Landlock,
only lo and no route, a host canary file and a host canary listener
unreachable. Any failure: nothing runs. The steps then run in order in the
same workspace (a copy of --workspace), with the plan's task as the egress
proxy's allowlist. /findings is copied out to --findings at the end (the
sandbox never sees that directory), and the sandbox is torn down.

After every step (and, for some, during it) airlock checks for signs of an
escape: a sandbox process outside its cgroup, a break in the audit chain since
the launch, a step killed by SIGSYS (seccomp), an attempt on a cloud metadata
address, a start-up probe that now fails, a write to a watched host file. On
any of them it halts the plan, freezes the sandbox, keeps the evidence (process
tree, mounts, network namespaces and sockets, workspace mtimes and contents)
under --evidence, records escape_suspected, and marks the findings UNTRUSTED.

Exit status: 0 when every step passed (or failed with continueOnFailure); 1
when a step failed and halted the plan; 121 when an escape was suspected; 73
when --findings were not all kept; 74 when steps ran but a record of the launch
could not be written to the audit log (a full disk): no later step was run; 125
when airlock could not launch (bad plan or policy, failed probe, image
mismatch, a --findings path that will not do; nothing was run); 127 when a
step's command is not installed, 126 when it cannot be executed (nothing was
run); 77 when the command gate denied a step, 75 when it escalated one and
denied none (nothing was run); 130 when interrupted by Ctrl-C (the running
step is killed at once), 143 when airlock was sent SIGTERM (the running step
gets SIGTERM and --stop-timeout seconds to end); no later step runs. See
docs/cli.md, "Exit codes".`,
		Example: `  airlock launch --plan examples/plan.json --workspace examples/target --findings ./findings
  airlock launch --plan plan.json --image ./image.oci@sha256:4f1c... --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 0:
				return usageError{fmt.Errorf("launch: unexpected argument %q (the steps are in the plan file)", args[0])}
			case planFile == "":
				return usageError{errors.New("launch: --plan is required")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			opts.Stdout, opts.Stderr = childOutput(stdout), childOutput(stderr)
			if asJSON {
				opts.Stdout = opts.Stderr // stdout carries the result alone
			}
			res, err := launchPlan(cmd, planFile, auditFile, grace, opts)
			flush(opts.Stdout)
			flush(opts.Stderr)
			if asJSON {
				if perr := termtext.WriteJSON(stdout, res, "  "); perr != nil && err == nil {
					err = perr
				}
			}
			reportLaunch(stderr, res, err)
			return &exitError{Code: res.ExitCode}
		},
	}
	f := cmd.Flags()
	f.StringVar(&planFile, "plan", "", "the test plan (JSON; see schemas/plan.schema.json)")
	f.StringVar(&opts.Workspace, "workspace", "", "host directory copied into /workspace")
	f.StringVar(&opts.Findings, "findings", "", "host directory that receives /findings after the plan")
	f.StringVar(&opts.Image, "image", "", "pinned image PATH@sha256:DIGEST used as the sandbox's read-only root")
	f.StringVar(&auditFile, "audit", "", "audit file (default: $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl)")
	f.StringVar(&opts.EvidenceDir, "evidence", "", "where a suspected escape's evidence goes (default: $XDG_STATE_HOME/airlock/evidence)")
	f.BoolVar(&asJSON, "json", false, "print the result as one JSON object on stdout (the steps' output goes to stderr)")
	stopFlag(cmd, &grace)
	policyflag.Add(cmd)
	return cmd
}

// launchPlan loads the plan, and the policy and the audit log as run
// does (newEnforcer), and launches. Ctrl-C ends the running step at once,
// SIGTERM after its grace period; the sandbox is torn down cleanly either
// way.
func launchPlan(cmd *cobra.Command, planFile, auditFile string, grace float64, opts runbook.Options) (runbook.Result, error) {
	fail := func(err error) (runbook.Result, error) {
		return runbook.Result{ExitCode: runbook.ExitSetup, Outcome: runbook.OutcomeSetup, Reason: err.Error(),
			Error: err.Error(), Steps: []runbook.StepResult{}}, err
	}
	plan, err := runbook.LoadPlan(planFile)
	if err != nil {
		return fail(err)
	}
	e, closeLog, err := newEnforcer(cmd, auditFile, opts.Workspace, opts.Findings)
	if err != nil {
		return fail(err)
	}
	defer closeLog()
	if err := e.Log().Signer().Check(); err != nil {
		return fail(err)
	}
	opts.PlanFile = planFile
	ctx, stop := signalContext(cmd.Context(), grace)
	defer stop()
	return runbook.Launch(ctx, e, plan, opts)
}

// reportLaunch prints one stderr line for every outcome but a pass, in
// the "airlock: <gate>: <decision>: <reason>" form of "airlock run".
func reportLaunch(w io.Writer, res runbook.Result, err error) {
	switch res.ExitCode {
	case runbook.ExitOK:
		if err != nil {
			fmt.Fprintf(w, "airlock: teardown: error: %v\n", err)
		}
	case runbook.ExitDenied:
		fmt.Fprintf(w, "airlock: command: deny: %s\n", res.Reason)
	case runbook.ExitEscalated:
		fmt.Fprintf(w, "airlock: command: escalate: %s\n", res.Reason)
	case runbook.ExitSetup, runbook.ExitNotFound, runbook.ExitCannotExec:
		fmt.Fprintf(w, "airlock: setup: error: %s\n", res.Reason)
	case runbook.ExitFindings:
		fmt.Fprintf(w, "airlock: findings: error: %s\n", strings.TrimPrefix(res.Error, "sandbox: "))
	case runbook.ExitEscape:
		fmt.Fprintf(w, "airlock: escape: suspected: %s\n", res.Reason)
		if res.Evidence != "" {
			fmt.Fprintf(w, "airlock: escape: evidence kept in %s\n", res.Evidence)
		}
	case runbook.ExitInterrupted, runbook.ExitTerminated:
		fmt.Fprintf(w, "airlock: interrupted: %s\n", res.Reason)
	default:
		fmt.Fprintf(w, "airlock: plan: failed: %s\n", res.Reason)
	}
	if res.AuditError != "" && res.Outcome != runbook.OutcomeSetup && res.Outcome != runbook.OutcomeRefused {
		printAuditError(w, res.AuditError)
	}
}
