package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/monitor"
)

func newRunCmd() *cobra.Command {
	var (
		req                  enforcer.Request
		auditFile, resultOut string
	)
	cmd := &cobra.Command{
		Use:   "run --tool T [--task K] [--workspace DIR] [--findings DIR] [--image PATH@sha256:D] [--audit FILE] [--result FILE] -- CMD [ARG...]",
		Short: "Decide a command at the command gate and run it in the sandbox",
		Long: `run decides the command at the command gate, records the decision in the audit
stream, and runs an allowed command in a Linux sandbox: its own namespaces, a
read-only system, a private /tmp, a copy of --workspace at /workspace, no
privileges, seccomp and Landlock, hard resource caps, and no network except the
airlock egress proxy, which applies the task's allowlist. The child's output is
streamed as it comes.

Exit status: the child's own; 128+N when it died of signal N (137 when a cap
killed it); 126 when the command gate denied or escalated; 125 when airlock
could not run it (nothing was run); 130 when interrupted (Ctrl-C or SIGTERM
end the sandbox cleanly: every process in it is killed and it is torn down);
122 when the command ran but a record of its run could not be written to the
audit log (a full disk): the result's commandExitCode keeps its own status.`,
		Example: `  airlock run --tool read_file -- cat /etc/os-release
  airlock run --tool run_tests --workspace . --result result.json -- pytest -v`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case req.Tool == "":
				return usageError{errors.New("run: --tool is required")}
			case len(args) == 0 || cmd.ArgsLenAtDash() != 0:
				return usageError{errors.New("run: put the command after --, e.g. airlock run --tool run_tests -- pytest -v")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Command, req.Args = args[0], args[1:]
			req.Stdin, req.Stdout, req.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
			res, err := runOnce(cmd, req, auditFile)
			if resultOut != "" {
				if werr := writeResult(resultOut, res); werr != nil && err == nil {
					err = werr
				}
			}
			reportOutcome(cmd, res, err)
			return &exitError{Code: res.ExitCode}
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Tool, "tool", "", "agent tool asking to run the command (its scope decides)")
	f.StringVar(&req.Task, "task", "", "egress task whose allowlist applies (default: the tool's name)")
	f.StringVar(&req.Workspace, "workspace", "", "host directory copied into /workspace")
	f.StringVar(&req.Findings, "findings", "", "host directory that receives /findings after the run")
	f.StringVar(&auditFile, "audit", "", "audit file (default: $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl)")
	f.StringVar(&resultOut, "result", "", "write the run's result as one JSON object to this file")
	f.StringArrayVar(&req.Env, "env", nil, "add NAME=VALUE to the child's environment (repeatable)")
	f.StringVar(&req.Image, "image", "", "run in a pinned image, PATH@sha256:DIGEST (an OCI layout or a docker-archive tarball), verified before anything runs")
	return cmd
}

// runOnce loads the policy and the audit log and runs req. Ctrl-C and
// SIGTERM end the sandbox cleanly.
func runOnce(cmd *cobra.Command, req enforcer.Request, auditFile string) (enforcer.Result, error) {
	fail := func(err error) (enforcer.Result, error) {
		return enforcer.Result{ExitCode: enforcer.ExitSetup, Error: err.Error()}, err
	}
	pol, err := loadPolicy(cmd)
	if err != nil {
		return fail(err)
	}
	log, err := openAudit(auditFile, monitor.New(monitor.ThresholdsFor(pol.Policy)))
	if err != nil {
		return fail(err)
	}
	defer log.Close()
	stderr := cmd.ErrOrStderr()
	e, err := enforcer.New(pol, log, enforcer.Options{OnEvent: func(ev audit.Event) {
		if ev.Kind == audit.KindBehavioral {
			fmt.Fprintf(stderr, "airlock: monitor: alert: %s: %s\n", ev.Context.Alert, ev.Reason)
		}
	}})
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return e.Run(ctx, req)
}

// openAudit opens the audit file named by --audit or the default, with the
// monitor watching every event written to it and the signing key
// (loadSigner) signing a checkpoint at the end of every run.
func openAudit(file string, m *monitor.Monitor) (*audit.Log, error) {
	if file == "" {
		var err error
		if file, err = audit.DefaultPath(); err != nil {
			return nil, err
		}
	}
	signer, err := loadSigner()
	if err != nil {
		return nil, err
	}
	return audit.Open(file, audit.WithHook(m), audit.WithSigner(signer), audit.WithCoalescing())
}

// reportOutcome prints the one stderr line PRODUCT.md gives for every
// refusal, kill and setup failure.
func reportOutcome(cmd *cobra.Command, res enforcer.Result, err error) {
	w := cmd.ErrOrStderr()
	switch {
	case err != nil && res.ExitCode == enforcer.ExitSetup:
		fmt.Fprintf(w, "airlock: setup: error: %v\n", err)
	case res.ExitCode == enforcer.ExitGate:
		fmt.Fprintf(w, "airlock: %s: %s: %s\n", res.Gate, res.Decision, res.Reason)
	case res.KilledBy != nil:
		fmt.Fprintf(w, "airlock: resource: kill: %s\n", res.KillReason)
	case res.Interrupted:
		fmt.Fprintln(w, "airlock: interrupted: the sandbox and every process in it were ended")
	case err != nil && !errors.Is(err, enforcer.ErrAudit):
		fmt.Fprintf(w, "airlock: %v\n", err)
	}
	if res.AuditError != "" && res.ExitCode != enforcer.ExitSetup {
		printAuditError(w, res.AuditError)
	}
	if res.EscapeSuspected != "" {
		fmt.Fprintf(w, "airlock: sandbox: escape_suspected: %s\n", res.EscapeSuspected)
	}
}

func writeResult(path string, res enforcer.Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
