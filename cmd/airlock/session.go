package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/holder/step"
	"github.com/airlock-sandbox/airlock/image"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

func newSessionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Run an agent's commands one after another in one sandbox",
		Long: `session keeps one sandbox across an agent's tool calls, for a harness that
shells out: start it, run each command in it (each decided at the command gate
against the tool that asks, and recorded before it runs; /workspace and /tmp
are kept from one command to the next, every process a command leaves is
killed), fetch what changed in /workspace as a patch, and stop it. A
background holder process of this user owns the sandbox. See docs/sessions.md.`,
	}
	cmd.AddCommand(newSessionStartCmd(), newSessionExecCmd(), newSessionChangesCmd(), newSessionStopCmd(), newSessionListCmd(),
		newSessionPoolCmd(), newSessionHoldCmd(), newSessionWatchCmd())
	return cmd
}

func newSessionStartCmd() *cobra.Command {
	var (
		req       enforcer.SessionRequest
		auditFile string
		asJSON    bool
		pooled    bool
	)
	cmd := &cobra.Command{
		Use:   "start [--task K] [--workspace DIR] [--image PATH@sha256:D] [--findings DIR] [--id ID] [--audit FILE] [--pool] [--json]",
		Short: "Start a session and print its id once its sandbox is ready",
		Long: `start copies --workspace into a new sandbox, runs the start-up probes inside it,
starts the egress proxy for --task (no destination without one), and prints
the session's id (with --json, one object) once the sandbox is ready. The
session ends when stopped, after the policy's session wallSeconds, or after
idleSeconds without a command. With --pool the session is opened by the
running session pool (airlock session pool) on a sandbox it built ahead,
with the pool's audit log.

Exit status 0 when the session started, 125 when it could not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var info holder.Info
			var err error
			if pooled {
				info, err = startPooled(cmd, req)
			} else {
				info, err = startHolder(cmd, req.Task, auditFile, holder.Config{Session: req})
			}
			if err != nil {
				return &exitError{Code: exitSetup, Err: fmt.Errorf("session start: %w", err)}
			}
			if asJSON {
				return termtext.WriteJSON(cmd.OutOrStdout(), info, "")
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), info.ID)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Task, "task", "", "egress task whose allowlist the proxy serves (default: none, no destination)")
	f.StringVar(&req.Workspace, "workspace", "", "host directory copied into /workspace")
	f.StringVar(&req.Findings, "findings", "", "host directory that receives /findings when the session ends")
	f.StringVar(&req.Image, "image", "", "run in a pinned image, PATH@sha256:DIGEST, verified before anything runs")
	f.StringVar(&req.ID, "id", "", "the session's id (default: a fresh random one)")
	f.StringVar(&auditFile, "audit", "", "audit file (default: $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl)")
	f.BoolVar(&asJSON, "json", false, "print the session as one JSON object")
	f.BoolVar(&pooled, "pool", false, "open the session from the running session pool (airlock session pool)")
	policyflag.Add(cmd)
	return cmd
}

// startHolder checks the policy, resolves every path, and starts a holder
// of cfg: a session's (cfg.Session) or, with cfg.Pool, the session pool's.
func startHolder(cmd *cobra.Command, task, auditFile string, cfg holder.Config) (holder.Info, error) {
	name, data, err := policySource(cmd, task)
	if err != nil {
		return holder.Info{}, err
	}
	if cfg.Audit, err = auditPath(auditFile); err != nil {
		return holder.Info{}, err
	}
	if err := absolute(&cfg.Audit); err != nil {
		return holder.Info{}, err
	}
	if err := resolveSession(&cfg.Session); err != nil {
		return holder.Info{}, err
	}
	if cfg.Pool != nil {
		if err := resolveImage(&cfg.Pool.Image); err != nil {
			return holder.Info{}, err
		}
	}
	if cfg.Dir == "" {
		if cfg.Dir, err = holder.Dir(); err != nil {
			return holder.Info{}, err
		}
	}
	// The holder signs with the key a run would (loadSigner): checked
	// here, so that a key that will not do fails the start, not the end.
	if _, err := loadSigner(); err != nil {
		return holder.Info{}, err
	}
	cfg.PolicyName, cfg.Policy = name, data
	cfg.Sign, cfg.AuditKey, cfg.Self = true, os.Getenv("AIRLOCK_AUDIT_KEY"), []string{"session"}
	return holder.Start(cmd.Context(), cfg)
}

// resolveSession makes a session request's host paths absolute: its
// holder runs elsewhere.
func resolveSession(req *enforcer.SessionRequest) error {
	for _, p := range []*string{&req.Workspace, &req.Findings} {
		if err := absolute(p); err != nil {
			return err
		}
	}
	return resolveImage(&req.Image)
}

// resolveImage makes the path of a non-empty PATH@sha256:DIGEST absolute.
func resolveImage(img *string) error {
	if *img == "" {
		return nil
	}
	ref, err := image.ParseRef(*img)
	if err != nil {
		return err
	}
	p := ref.Path
	if err := absolute(&p); err != nil {
		return err
	}
	*img = p + "@" + ref.Digest.String()
	return nil
}

// policySource is the policy the command line would use, checked, with
// its bytes: the holder decides under exactly these, the bytes that were
// checked (never the file read again, which may have been swapped since).
// A task named that it has no allowlist for is warned of (warnTask).
func policySource(cmd *cobra.Command, task string) (string, []byte, error) {
	pol, err := loadPolicy(cmd)
	if err != nil {
		return "", nil, err
	}
	testHookPolicyLoaded(pol)
	warnTask(cmd, pol.Policy, task)
	if pol.Source == policy.EmbeddedName {
		return pol.Source, pol.Data, nil
	}
	name, err := filepath.Abs(pol.Source)
	return name, pol.Data, err
}

// testHookPolicyLoaded runs once the policy has been loaded and checked
// (a test swaps the file there).
var testHookPolicyLoaded = func(*policy.Loaded) {}

// absolute makes a non-empty path absolute.
func absolute(p *string) error {
	if *p == "" {
		return nil
	}
	abs, err := filepath.Abs(*p)
	*p = abs
	return err
}

func newSessionExecCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec ID --tool T [--json] [--result FILE|-] [--quiet] [--timeout S] [--env K=V|K] [--cwd DIR] [--approval ID] -- CMD [ARG...]",
		Short: "Run one command in a session; exit as airlock run does",
		Long: `exec decides the command at the command gate against --tool, records the
decision, and runs an allowed command in the session's sandbox, in --cwd
(relative to /workspace), with the tool's caps (--timeout lowers its wall
clock). Its output is streamed; with --json it is captured instead and one
result object (docs/result.md) is printed on stdout. --env K=V sets a
variable, replacing airlock's own of that name; --env K passes K's value
from here; a proxy variable is airlock's, refused (exit 2). --approval ID
runs an escalated command once, asked for exactly as its request showed it:
the same command, --env, --cwd and stdin (read to its end first, at most 1
MiB).

Exit status: as airlock run — the child's own; 128+N when it died of signal N
(137 when a cap killed it); 77 denied; 75 escalated and not approved; 126
could not be executed; 127 not installed; 125 airlock could not run it (no
such session); 130 interrupted (Ctrl-C: the command is killed at once); 143
terminated (SIGTERM: the command gets SIGTERM and --stop-timeout seconds
before it is killed); 74 the command ran but a record of its run could not be
written to the audit log (a full disk). The session goes on either way, but
for 121: the sandbox's init died, or an alert the policy's session.onAlert
names stopped the session (docs/sessions.md).`,
		Example: `  airlock session exec "$S" --tool install_deps -- pip install -r requirements.txt
  airlock session exec "$S" --tool run_tests --json -- pytest -v`,
		// The flags are read as the quick client reads them (step.Parse);
		// cobra has them for the help alone.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			wd, _ := os.Getwd()
			r, err := step.Parse(args, os.LookupEnv, wd)
			switch {
			case errors.Is(err, step.ErrHelp):
				return cmd.Help()
			case err != nil:
				return usageError{errors.New(termtext.Escape(err.Error()))}
			}
			return &exitError{Code: execStep(cmd, r)}
		},
	}
	var (
		st  enforcer.StepRequest
		out resultFlags
	)
	f := cmd.Flags()
	f.StringVar(&st.Tool, "tool", "", "agent tool asking to run the command (its scope decides)")
	f.StringVar(&st.Approval, "approval", "", "run an escalated command once on this approved request's id")
	out.register(cmd)
	return cmd
}

// execStep runs r through its session's holder, which tells the outcome
// on this command line's stdout and stderr, and returns its exit status;
// Ctrl-C interrupts it at once, SIGTERM after its grace period. When the
// holder did not take the step or did not answer, the outcome is a setup
// failure, told here.
func execStep(cmd *cobra.Command, r step.Request) int {
	ctx, stop := step.Interruptible(cmd.Context())
	defer stop()
	c, err := dialSession(r.Session)
	if err == nil {
		var code int
		code, err = c.Step(ctx, r, cmd.InOrStdin(), termtext.Raw(cmd.OutOrStdout()), termtext.Raw(cmd.ErrOrStderr()))
		if err == nil {
			return code
		}
	}
	res := enforcer.SetupResult(r.Session, r.Session, 1, err)
	return enforcer.Report{JSON: r.JSON, Result: r.Result, Quiet: r.Quiet}.Tell(cmd.OutOrStdout(), cmd.ErrOrStderr(), res, err)
}

// dialSession finds session id's holder in this user's runtime directory.
func dialSession(id string) (*holder.Client, error) {
	dir, err := holder.Dir()
	if err != nil {
		return nil, err
	}
	return holder.Dial(dir, id)
}

func newSessionChangesCmd() *cobra.Command {
	var (
		patch  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "changes ID [--patch FILE [--json]]",
		Short: "Print what changed in the session's /workspace, as a patch git can apply",
		Long: `changes hands back what changed in /workspace since the session started: a
unified diff in git's format, applicable with git apply to the original tree.
It is written by whatever ran in the sandbox: read it before you apply it;
airlock never applies it. Without --patch it goes to stdout (never to a
terminal); with --patch FILE it goes to FILE and the changed paths are listed
on stdout, with what the policy's changes.exclude and the workspace's own
.gitignore files left out (with --json, one object).

Exit status 0 when the patch carries every change; 73 when it was written but
leaves changes out (one stderr line for each class of them; the changed paths
say which and why) or its list of changed paths was lost; 125 when no patch
was made (no such session).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && patch == "" {
				return usageError{errors.New("session changes: --json needs --patch FILE (without it, stdout is the patch)")}
			}
			c, err := dialSession(args[0])
			if err != nil {
				return &exitError{Code: exitSetup, Err: err}
			}
			f, done, err := patchFile(cmd, patch)
			if err != nil {
				return &exitError{Code: exitSetup, Err: err}
			}
			ch, err := c.Changes(f)
			if derr := done(); err == nil {
				err = derr
			}
			lost := errors.Is(err, holder.ErrAnswerLost) // the patch was written
			if err != nil && !lost {
				return &exitError{Code: exitSetup, Err: fmt.Errorf("session changes: %w", err)}
			}
			var werr error
			switch {
			case patch != "" && asJSON:
				werr = termtext.WriteJSON(cmd.OutOrStdout(), ch, "")
			case patch != "":
				printManifest(cmd.OutOrStdout(), ch)
			}
			if patchShort(cmd.ErrOrStderr(), "session changes", &ch, err) {
				return &exitError{Code: exitPatchShort}
			}
			return werr
		},
	}
	cmd.Flags().StringVar(&patch, "patch", "", "write the patch to this file and list the changed paths")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --patch: list the changed paths as one JSON object")
	return cmd
}

// patchFile opens where a patch goes: FILE, or stdout when it is not a
// terminal (a patch is untrusted bytes).
func patchFile(cmd *cobra.Command, path string) (*os.File, func() error, error) {
	if path == "" {
		out, ok := termtext.Raw(cmd.OutOrStdout()).(*os.File)
		if !ok || isTerminal(out) {
			return nil, nil, errors.New("the patch is untrusted and may hold terminal escapes: give --patch FILE, or redirect stdout")
		}
		return out, func() error { return nil }, nil
	}
	// A regular file only, opened without blocking: a FIFO hung the
	// command, and a terminal (--patch /dev/tty) got the untrusted
	// patch's bytes raw.
	f, err := hostfile.Create(path, 0o644)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// printManifest lists the changed paths, one a line, quoted as git
// quotes them (nothing a terminal interprets), then what was excluded by
// rule, a line for each class.
func printManifest(w io.Writer, ch enforcer.Changes) {
	for _, c := range ch.Files {
		switch {
		case c.OldPath != "":
			fmt.Fprintf(w, "%s %s -> %s", c.Kind, changes.QuotePath(c.OldPath), changes.QuotePath(c.Path))
		default:
			fmt.Fprintf(w, "%s %s", c.Kind, changes.QuotePath(c.Path))
		}
		if c.Omitted != "" {
			fmt.Fprintf(w, " (not in the patch: %s)", termtext.Escape(c.Omitted))
		}
		fmt.Fprintln(w)
	}
	for _, e := range ch.Excluded {
		fmt.Fprintln(w, termtext.Escape(e.String()))
	}
}

// exitPatchShort is the status of session changes and stop when the
// patch asked for is not all there: it could not be made, it leaves
// changes out, or the holder's answer was lost (EX_CANTCREAT).
const exitPatchShort = 73

// patchShort reports whether the patch a command wrote is short, and
// says why on w: err (which matches holder.ErrNoPatch or ErrAnswerLost)
// in a line, or ch's omissions (ch is nil without a patch), a line for
// each class of the changes it leaves out.
func patchShort(w io.Writer, what string, ch *enforcer.Changes, err error) bool {
	switch {
	case err != nil:
		fmt.Fprintf(w, "airlock: %s: %s\n", what, termtext.Escape(err.Error()))
	case ch == nil || ch.Incomplete == "":
		return false
	case len(ch.Omissions) == 0: // a holder of an airlock that did not count them
		fmt.Fprintf(w, "airlock: %s: %s\n", what, termtext.Escape(ch.Incomplete))
	}
	if ch != nil {
		for _, o := range ch.Omissions {
			fmt.Fprintf(w, "airlock: %s: %s\n", what, termtext.Escape(o.String()))
		}
	}
	return true
}

// lostPatch is the part of Stop's error under holder.ErrNoPatch or
// holder.ErrAnswerLost (Stop joins it with an audit error); nil when
// there is none.
func lostPatch(err error) error {
	if !errors.Is(err, holder.ErrNoPatch) && !errors.Is(err, holder.ErrAnswerLost) {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if errors.Is(e, holder.ErrNoPatch) || errors.Is(e, holder.ErrAnswerLost) {
				return e
			}
		}
	}
	return err
}

func newSessionStopCmd() *cobra.Command {
	var (
		findings, patch string
		asJSON          bool
	)
	cmd := &cobra.Command{
		Use:   "stop ID [--findings DIR] [--patch FILE] [--json]",
		Short: "Stop a session: its patch, its findings, and the teardown",
		Long: `stop writes the session's patch to --patch FILE (see airlock session changes),
kills every process of the session, copies /findings to --findings (else where
start said), tears the sandbox down, and prints what the session did (with
--json, one object).

Exit status 0; 73 when the session stopped but the patch asked for could not be
made or leaves changes out (one stderr line for each class of them), or the
holder's answer was lost after it stopped;
74 when it stopped but a record of it (its teardown, its checkpoint) could not
be written to the audit log (a full disk; 74 wins over 73); 125 when nothing
was stopped (no such session).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := dialSession(args[0])
			if err != nil {
				return &exitError{Code: exitSetup, Err: err}
			}
			var dst *string
			if findings != "" {
				if err := absolute(&findings); err != nil {
					return &exitError{Code: exitSetup, Err: err}
				}
				dst = &findings
			}
			var pf *os.File
			done := func() error { return nil }
			if patch != "" {
				if pf, done, err = patchFile(cmd, patch); err != nil {
					return &exitError{Code: exitSetup, Err: err}
				}
			}
			sum, ch, err := c.Stop(dst, pf)
			if derr := done(); err == nil {
				err = derr
			}
			short := lostPatch(err)
			if err != nil && short == nil && !errors.Is(err, enforcer.ErrAudit) {
				return &exitError{Code: exitSetup, Err: fmt.Errorf("session stop: %w", err)}
			}
			// Stopped: say so, then what was lost.
			var werr error
			switch {
			case sum.Session == "": // the answer was lost
			case asJSON:
				werr = termtext.WriteJSON(cmd.OutOrStdout(), struct {
					enforcer.SessionSummary
					Changes *enforcer.Changes `json:"changes,omitempty"`
				}{sum, ch}, "")
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "session %s stopped after %d %s\n", sum.Session, sum.Steps, plural(sum.Steps, "command"))
				for _, s := range sum.FindingsSkipped {
					fmt.Fprintf(cmd.ErrOrStderr(), "airlock: findings: skipped %s\n", termtext.Escape(s))
				}
			}
			code := exitOK
			if patchShort(cmd.ErrOrStderr(), "session stop", ch, short) {
				code = exitPatchShort
			}
			if errors.Is(err, enforcer.ErrAudit) {
				if sum.Error != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "airlock: session stop: teardown: %s\n", termtext.Escape(sum.Error))
				}
				printAuditError(cmd.ErrOrStderr(), sum.AuditError)
				code = enforcer.ExitAudit // as run's: over 73
			}
			if code != exitOK {
				return &exitError{Code: code}
			}
			return werr
		},
	}
	cmd.Flags().StringVar(&findings, "findings", "", "host directory that receives /findings (default: the one start was given)")
	cmd.Flags().StringVar(&patch, "patch", "", "write the session's patch to this file first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the session's summary as one JSON object")
	return cmd
}

func newSessionListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List this user's live sessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := holder.Dir()
			if err != nil {
				return err
			}
			infos, err := holder.List(dir)
			if err != nil {
				return err
			}
			if asJSON {
				return termtext.WriteJSON(cmd.OutOrStdout(), orEmpty(infos), "")
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTASK\tHOLDER\tSTARTED")
			for _, i := range infos {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", i.ID, termtext.Escape(i.Task), i.Pid, i.Started.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions as a JSON array")
	return cmd
}

// newSessionHoldCmd is the holder process (holder.Hold), run by session
// start; not for people.
func newSessionHoldCmd() *cobra.Command {
	return &cobra.Command{
		Use: "hold", Hidden: true, Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			serverGC()
			if err := holder.Hold(os.Stdin, os.Stdout, approvalOptions); err != nil {
				return &exitError{Code: exitSetup}
			}
			return nil
		},
	}
}

// newSessionWatchCmd is a holder's watchdog (holder.Watch); not for people.
func newSessionWatchCmd() *cobra.Command {
	return &cobra.Command{
		Use: "watch", Hidden: true, Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return holder.Watch(os.Stdin, os.Stdout) },
	}
}
