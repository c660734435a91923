package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/holder/step"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/linelog"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/policy"
)

func newRunCmd() *cobra.Command {
	var (
		req       enforcer.Request
		auditFile string
		out       resultFlags
	)
	cmd := &cobra.Command{
		Use:   "run --tool T [--task K] [--workspace DIR] [--findings DIR] [--image PATH@sha256:D] [--env K=V|K] [--cwd DIR] [--timeout S] [--audit FILE] [--json] [--result FILE|-] [--quiet] [--approval ID] -- CMD [ARG...]",
		Short: "Decide a command at the command gate and run it in the sandbox",
		Long: `run decides the command at the command gate, records the decision in the audit
stream, and runs an allowed command in a Linux sandbox: its own namespaces, a
read-only system, a private /tmp, a copy of --workspace at /workspace, no
privileges, seccomp and Landlock, hard resource caps, and no network except the
airlock egress proxy, which applies the task's allowlist. The child's output is
streamed as it comes; with --json it is captured instead, and one result object
(docs/result.md) is printed on stdout. Each egress refusal is one stderr line
as it happens.

An escalated command runs once with --approval ID, the id of an approval
request an operator approved (airlock approve ID), asked for again exactly as
the request showed it: the same command, --env, --cwd, --task, --workspace,
--image and stdin (an escalated command's stdin is read to its end first, at
most 1 MiB, as the approval is bound to it).

--env NAME=VALUE sets a variable, replacing airlock's own of that name (HOME
is /tmp/home, the caches under /tmp/cache); --env NAME passes NAME's value
from here (nothing else of airlock's environment goes in); a proxy variable
is airlock's, refused (exit 2). --cwd is the working directory inside,
relative to /workspace; --timeout lowers the tool's wall-clock cap. A --task
the policy has no allowlist for is warned of, with the nearest task. --quiet
prints only errors of airlock's own on stderr.

Exit status: the child's own; 128+N when it died of signal N (137 when a cap
killed it); 77 when the command gate denied it; 75 when it escalated and no
approval let it run; 127 when it is not installed; 126 when it cannot be
executed; 125 when airlock could not run it (nothing was run); 130 when
interrupted by Ctrl-C (every process in the sandbox is killed at once and it
is torn down); 143 when airlock was sent SIGTERM (the command gets SIGTERM,
and --stop-timeout seconds, 10 by default, to end before it is killed); 121
when the sandbox's init died (its integrity is not assured); 73 when
--findings were not all kept; 74 when the command ran but a record of its run
could not be written to the audit log (a full disk): the result's
commandExitCode keeps its own status (docs/cli.md, "Exit codes").

--findings names a directory airlock makes (or an empty one of the
caller's): never a path through a symbolic link, never one with files in it.`,
		Example: `  airlock run --tool read_file -- cat /etc/os-release
  airlock run --tool run_tests --workspace . --json -- pytest -v`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case req.Tool == "":
				return usageError{errors.New("run: --tool is required")}
			case len(args) == 0 || cmd.ArgsLenAtDash() != 0:
				return usageError{errors.New("run: put the command after --, e.g. airlock run --tool run_tests -- pytest -v")}
			}
			return out.check("run")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Command, req.Args = args[0], args[1:]
			var err error
			if req.Env, err = step.Env(out.env, os.LookupEnv); err != nil {
				return usageError{fmt.Errorf("run: %w", err)}
			}
			req.Cwd, req.Timeout = out.cwd, out.timeoutDuration()
			req.Stdin, req.Stdout, req.Stderr = os.Stdin, childOutput(cmd.OutOrStdout()), childOutput(cmd.ErrOrStderr())
			rep := out.report()
			capture := rep.Capture(&req.Stdout, &req.Stderr)
			req.Notices = rep.Notices(cmd.ErrOrStderr())
			res, err := runOnce(cmd, req, auditFile, out)
			flush(req.Stdout)
			flush(req.Stderr)
			capture(&res)
			// The result where the flags say, the stderr line of a refusal,
			// kill or failure, and the result's status.
			return &exitError{Code: rep.Tell(cmd.OutOrStdout(), cmd.ErrOrStderr(), res, err)}
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Tool, "tool", "", "agent tool asking to run the command (its scope decides)")
	f.StringVar(&req.Task, "task", "", "egress task whose allowlist applies (default: the tool's name)")
	f.StringVar(&req.Workspace, "workspace", "", "host directory copied into /workspace")
	f.StringVar(&req.Findings, "findings", "", "host directory that receives /findings after the run")
	f.StringVar(&auditFile, "audit", "", "audit file (default: $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl)")
	f.StringVar(&req.Image, "image", "", "run in a pinned image, PATH@sha256:DIGEST (an OCI layout or a docker-archive tarball), verified before anything runs")
	f.StringVar(&req.Approval, "approval", "", "run an escalated command once on this approved request's id")
	out.register(cmd)
	policyflag.Add(cmd)
	return cmd
}

// runOnce loads the policy and the audit log and runs req. Ctrl-C ends
// the sandbox at once, SIGTERM after the command's grace period.
func runOnce(cmd *cobra.Command, req enforcer.Request, auditFile string, out resultFlags) (enforcer.Result, error) {
	e, closeLog, err := newEnforcer(cmd, auditFile, req.Workspace, req.Findings)
	if err != nil {
		return enforcer.SetupResult(req.RunID, "", 1, err), err
	}
	defer closeLog()
	warnTask(cmd, e.Policy().Policy, req.Task)
	ctx, stop := signalContext(cmd.Context(), out.grace)
	defer stop()
	return e.Run(ctx, req)
}

// newEnforcer loads the policy and the audit log, refuses either when it
// lies in the run's workspace or findings directory, and returns an
// Enforcer that prints the monitor's alerts on stderr as they are raised;
// adjust, if given, changes its options last (airlock mcp's approver).
func newEnforcer(cmd *cobra.Command, auditFile, workspace, findings string, adjust ...func(*policy.Loaded, *enforcer.Options)) (*enforcer.Enforcer, func(), error) {
	pol, err := loadPolicy(cmd)
	if err != nil {
		return nil, nil, err
	}
	if auditFile, err = auditPath(auditFile); err != nil {
		return nil, nil, err
	}
	if err := outsideSandbox(pol, auditFile, workspace, findings); err != nil {
		return nil, nil, err
	}
	// The monitor watches every event written to the log, repeated
	// refusals are coalesced, and the signing key signs a checkpoint at
	// the end of every run. The key is still being checked here
	// (prepareSigner): the enforcer waits for the check
	// (audit.Signer.Check) before anything runs, and so must its callers.
	signer, err := prepareSigner()
	if err != nil {
		return nil, nil, err
	}
	log, err := audit.Open(auditFile, audit.WithHook(monitor.New(monitor.ThresholdsFor(pol.Policy))), audit.WithSigner(signer), audit.WithCoalescing())
	if err != nil {
		return nil, nil, err
	}
	// Alerts come from the proxy's decisions too: a stderr nobody reads
	// must not stop them (linelog drops and counts instead).
	stderr := linelog.New(cmd.ErrOrStderr())
	opts := enforcer.Options{OnEvent: func(ev audit.Event) {
		if ev.Kind == audit.KindBehavioral && !quiet(cmd) {
			stderr.Printf("airlock: monitor: alert: %s: %s", ev.Context.Alert, ev.Reason)
		}
	}}
	closeAll := func() {
		stderr.Close(time.Second)
		log.Close()
	}
	if err := approvalOptions(&opts); err != nil {
		closeAll()
		return nil, nil, err
	}
	for _, f := range adjust {
		f(pol, &opts)
	}
	e, err := enforcer.New(pol, log, opts)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return e, closeAll, nil
}

// warnTask warns on stderr, with the nearest task the policy has, when
// task was named (--task) and the policy has no egress allowlist for it:
// its sandbox would reach no destination, which is never what naming a
// task means. A task left to its default is not warned of; each refusal
// says why as it happens.
func warnTask(cmd *cobra.Command, pol *policy.Policy, task string) {
	if task == "" || quiet(cmd) {
		return
	}
	if hint := policy.TaskHint(pol.EgressConfig().TaskAllowlist, task); hint != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "airlock: warning: task %q has no egress allowlist in the policy, so every destination will be refused; %s\n", task, hint)
	}
}

// auditPath returns the audit file named by --audit, else the default.
func auditPath(file string) (string, error) {
	if file != "" {
		return file, nil
	}
	return audit.DefaultPath()
}

// outsideSandbox refuses a run whose policy or audit log lies in its
// --workspace or --findings directory, compared by real paths
// (docs/policy.md): the sandbox gets a copy of the workspace, so it would
// read them, and findings are copied out, so it could write over them.
func outsideSandbox(pol *policy.Loaded, auditFile, workspace, findings string) error {
	log, err := hostfile.Real(auditFile)
	if err != nil {
		return fmt.Errorf("audit: %s: %w", auditFile, err)
	}
	for _, d := range []struct{ flag, dir string }{{"--workspace", workspace}, {"--findings", findings}} {
		if d.dir == "" {
			continue
		}
		if err := pol.Outside(d.flag, d.dir); err != nil {
			return err
		}
		dir, err := hostfile.Real(d.dir)
		if err != nil {
			return fmt.Errorf("%s %s: %w", d.flag, d.dir, err)
		}
		if hostfile.Within(log, dir) {
			return fmt.Errorf("audit: the log %s is inside the run's %s directory %s, which the sandbox can read or write: "+
				"keep the audit log outside it", auditFile, d.flag, d.dir)
		}
	}
	return nil
}
