package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/monitor"
)

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit (verify|timeline|alerts|checkpoint|prove|verify-proof|pubkey|export|rotate) [FILE]",
		Short: "Check the audit log's chain, tree and checkpoints, sign and prove, show its timeline or alerts",
		Long: `audit reads an airlock audit log: FILE, else $AIRLOCK_AUDIT, else
$XDG_STATE_HOME/airlock/audit.jsonl (~/.local/state/airlock/audit.jsonl when
XDG_STATE_HOME is unset).`,
		// Without this, "airlock audit verfy FILE" would print the help and
		// exit 0, and a CI check built on it would pass.
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("audit: give a subcommand: " + auditSubcommands)}
			}
			return usageError{fmt.Errorf("audit: unknown subcommand %q (want %s)", args[0], auditSubcommands)}
		},
	}
	cmd.AddCommand(newAuditVerifyCmd(), newAuditTimelineCmd(), newAuditAlertsCmd(),
		newAuditCheckpointCmd(), newAuditProveCmd(), newAuditVerifyProofCmd(), newAuditPubkeyCmd(), newAuditExportCmd(), newAuditRotateCmd())
	return cmd
}

const auditSubcommands = "verify, timeline, alerts, checkpoint, prove, verify-proof, pubkey, export or rotate"

// atMostOneFile is the Args check of the subcommands.
func atMostOneFile(sub string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 1 {
			return usageError{fmt.Errorf("audit %s: at most one FILE", sub)}
		}
		return nil
	}
}

// auditFile returns the log a subcommand reads.
func auditFile(args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	return audit.DefaultPath()
}

// auditFailed is the exit of a subcommand that found the log bad: status
// 1 and "audit CMD: FILE:LINE: reason".
func auditFailed(sub, file string, err error) error {
	var e *audit.Error
	switch {
	case errors.As(err, &e) && e.Line > 0:
		err = fmt.Errorf("audit %s: %s:%d: %s", sub, file, e.Line, e.Reason)
	case errors.As(err, &e):
		err = fmt.Errorf("audit %s: %s: %s", sub, file, e.Reason)
	default:
		err = fmt.Errorf("audit %s: %w", sub, err)
	}
	return &exitError{Code: exitFailed, Err: err}
}

func newAuditVerifyCmd() *cobra.Command {
	var (
		head, key   string
		checkpoints []string
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "verify [--head HASH] [--key PUBKEY [--checkpoint FILE]...] [--json] [FILE...]",
		Short: "Check the hash chain, the Merkle tree and signed checkpoints; exit 1 naming the first bad line",
		Long: `verify checks every line of the audit log and the chain that binds each line to
the one before it, and computes the Merkle tree over its records. It exits 0
and prints the number of events, the head hash, the tree and the guarantees
the log has, or exits 1 naming the first bad line and why: an edit, a
deletion, an insertion, a reordering, a cut in the middle, a duplicated or
damaged line.

A chain alone cannot show lines cut from its end, nor a log rewritten from
scratch. With --key (the public key, NAME+HASH+KEY, or a file holding it:
"airlock audit pubkey" prints it) verify also checks signed checkpoints: each
--checkpoint FILE, else the latest one kept beside the log (FILE.checkpoint).
It fails unless each is signed by that key, names this log, and the log's
first records still have its root: a truncation, a rewind or a rewrite of
what a checkpoint covers is caught by anyone who kept it. --head HASH checks a
head hash kept earlier the same way, without a key.

A rotated log ("airlock audit rotate") is verified across its files given in
order, oldest first (FILE.N… then FILE); its newest file alone also verifies,
its first line carrying on the chain and the tree of the files before it.`,
		Example: `  airlock audit verify
  airlock audit verify --key "$(cat ~/.local/state/airlock/audit-key/signing.pub)" --checkpoint kept.checkpoint
  airlock audit verify --head 9f2c…e1 /var/log/airlock/audit.jsonl`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			files := args
			if len(files) == 0 {
				file, err := auditFile(nil)
				if err != nil {
					return err
				}
				files = []string{file}
			}
			file := files[len(files)-1]
			if head != "" && !audit.IsHash(head) {
				return usageError{errors.New("audit verify: --head must be a 64-digit lower-case hex hash")}
			}
			if len(checkpoints) > 0 && key == "" {
				return usageError{errors.New("audit verify: --checkpoint needs --key, the public key that signed it")}
			}
			vkey, err := publicKey(key)
			if err != nil {
				return err
			}
			opts := audit.VerifyOptions{Head: head}
			if vkey != "" {
				if len(checkpoints) == 0 {
					checkpoints = []string{file + audit.CheckpointSuffix}
				}
				for _, c := range checkpoints {
					cp, err := audit.ReadCheckpointFile(c, vkey)
					if err != nil {
						return auditFailed("verify", c, err)
					}
					opts.Checkpoints = append(opts.Checkpoints, cp)
				}
			}
			r, err := openFiles(files)
			if err != nil {
				return auditFailed("verify", r.current(), err)
			}
			defer r.Close()
			rep, verr := audit.VerifyWith(r, opts)
			if len(files) > 1 {
				var e *audit.Error
				if errors.As(verr, &e) && e.Line > 0 {
					file, e.Line = r.locate(e.Line)
				}
			}
			if asJSON {
				printVerifyJSON(cmd.OutOrStdout(), file, rep, verr)
				if verr != nil {
					return &exitError{Code: exitFailed}
				}
				return nil
			}
			for _, r := range rep.Repairs {
				fmt.Fprintf(cmd.ErrOrStderr(), "airlock: audit verify: %s:%d: warning: damaged line (%d bytes) "+
					"closed off by the repair record on line %d\n", file, r.Line, r.Bytes, r.MarkerLine)
			}
			warnLossy(cmd.ErrOrStderr(), file, rep)
			if verr != nil {
				return auditFailed("verify", file, verr)
			}
			if rep.Events == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: empty log\n", file)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: %d events, chain %s, head %s (seq %d)\n",
				file, rep.Events, rep.ChainID, rep.Head, rep.HeadSeq)
			printGuarantees(cmd.OutOrStdout(), rep, head != "")
			return nil
		},
	}
	cmd.Flags().StringVar(&head, "head", "", "fail unless the log holds a line with this hash (recorded earlier)")
	cmd.Flags().StringVar(&key, "key", "", "the public key that signs checkpoints (NAME+HASH+KEY, or a file holding it)")
	cmd.Flags().StringArrayVar(&checkpoints, "checkpoint", nil, "a checkpoint kept earlier (repeatable; default: FILE.checkpoint)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// printGuarantees says what the verified log proves, and what it cannot.
func printGuarantees(w io.Writer, rep audit.Report, anchored bool) {
	fmt.Fprintf(w, "  chain: every line up to the head is as written: an edit, deletion, insertion or reordering would show\n")
	fmt.Fprintf(w, "  tree: %d records, root %s (RFC 6962): any record can be proven in a checkpoint of this size\n", rep.TreeSize, rep.TreeRoot)
	switch {
	case len(rep.Checkpoints) > 0:
		last := rep.Checkpoints[len(rep.Checkpoints)-1]
		fmt.Fprintf(w, "  signed: consistent with %d %s signed by %s, the last at size %d: "+
			"a cut, rewind or rewrite of what they cover would show\n", len(rep.Checkpoints),
			plural(len(rep.Checkpoints), "checkpoint"), strings.TrimSuffix(last.Origin, "/"+rep.ChainID), last.Size)
	case anchored:
		fmt.Fprintf(w, "  anchored: the head given with --head is in the log\n")
	default:
		fmt.Fprintf(w, "  unsigned: no checkpoint was checked: a cut from the end or a rewrite from scratch would not show (use --key)\n")
	}
	if rep.Unhashed > 0 {
		fmt.Fprintf(w, "  argv: %d %s with a command carry no argvSha256 (written by an older airlock): "+
			"a shortened command line in them is not provable\n", rep.Unhashed, plural(rep.Unhashed, "record"))
	}
}

// warnLossy names the lines that an older airlock wrote with bytes that
// were not UTF-8 replaced by U+FFFD.
func warnLossy(w io.Writer, file string, rep audit.Report) {
	if rep.Lossy == 0 {
		return
	}
	lines := make([]string, len(rep.LossyLines))
	for i, n := range rep.LossyLines {
		lines[i] = strconv.Itoa(n)
	}
	more := ""
	if rep.Lossy > len(rep.LossyLines) {
		more = fmt.Sprintf(" and %d more", rep.Lossy-len(rep.LossyLines))
	}
	fmt.Fprintf(w, "airlock: audit verify: %s: warning: %d %s (%s %s%s) written by an older airlock, which "+
		"replaced bytes that were not UTF-8 with U+FFFD: their hashes and chain hold, but those bytes are lost\n",
		file, rep.Lossy, plural(rep.Lossy, "line"), plural(len(lines), "line"), strings.Join(lines, ", "), more)
}

// verifyJSON is the --json output of audit verify.
type verifyJSON struct {
	File string `json:"file"`
	OK   bool   `json:"ok"`
	audit.Report
	Error *audit.Error `json:"error,omitempty"`
}

func printVerifyJSON(w io.Writer, file string, rep audit.Report, verr error) {
	out := verifyJSON{File: file, OK: verr == nil, Report: rep}
	if verr != nil && !errors.As(verr, &out.Error) {
		out.Error = &audit.Error{Reason: verr.Error()}
	}
	_ = termtext.WriteJSON(w, out, "")
}

func newAuditTimelineCmd() *cobra.Command {
	var (
		follow, utc, absolute, asJSON bool
		sel                           selection
	)
	cmd := &cobra.Command{
		Use:   "timeline [--follow] [--run ID] [--session ID] [--tool T] [--kind K] [--since T] [--json] [FILE]",
		Short: "One readable line per event; --follow shows events as they are written",
		Long: `timeline prints one line per event of the audit log: time, how long ago, run
(or session), tool or task, subject, what was decided where, and the reason,
byte counts in IEC units (1.0 MiB). It checks the chain as it reads: at the
first bad line it prints "!! line N: why", marks every later event "?", and
exits 1.

--run, --session, --tool, --kind (command, egress, resource, behavioral,
lifecycle; repeatable or comma-separated) and --since (a duration such as
10m, or an RFC 3339 time) select the events shown; every line is still
verified. --json prints one JSON object per event shown instead:
{"line":N,"verified":true,"event":{…}}.

--follow keeps reading as airlock appends (the live view of a run), until
interrupted; it waits for the file when it does not exist yet.`,
		Example: `  airlock audit timeline --since 1h --kind egress
  airlock audit timeline --run run-3f2a9c81d0e4 --json
  airlock audit timeline --follow &
  airlock run --tool run_tests -- pytest -v`,
		Args: atMostOneFile("timeline"),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := auditFile(args)
			if err != nil {
				return err
			}
			filter, err := sel.filter("timeline")
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			f, err := openLog(ctx, file, follow)
			if err != nil {
				return auditFailed("timeline", file, err)
			}
			if f == nil {
				return nil // interrupted while waiting for the file
			}
			defer f.Close()
			opts := audit.TimelineOptions{Follow: follow, Location: location(utc), Filter: filter, JSON: asJSON}
			if !absolute {
				opts.Now = time.Now
			}
			if _, err := audit.Timeline(ctx, cmd.OutOrStdout(), f, opts); err != nil {
				return auditFailed("timeline", file, err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&follow, "follow", "f", false, "keep showing events as they are appended")
	fl.BoolVar(&utc, "utc", false, "show times in UTC instead of local time")
	fl.BoolVar(&absolute, "absolute", false, "leave out how long ago each event was")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per event")
	sel.add(cmd)
	return cmd
}

// selection is the event filter flags of timeline and export.
type selection struct {
	f     audit.Filter
	kinds []string
	since string
}

func (s *selection) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&s.f.Run, "run", "", "only the events of this run")
	fl.StringVar(&s.f.Session, "session", "", "only the events of this session")
	fl.StringVar(&s.f.Tool, "tool", "", "only the events of this tool")
	fl.StringArrayVar(&s.kinds, "kind", nil, "only events of this kind: command, egress, resource, behavioral, lifecycle (repeatable)")
	fl.StringVar(&s.since, "since", "", "only events since this long ago (10m, 2h) or this RFC 3339 time")
}

// filter checks the flags and returns the filter they make.
func (s *selection) filter(sub string) (audit.Filter, error) {
	f := s.f
	for _, k := range s.kinds {
		for _, one := range strings.Split(k, ",") {
			if !audit.Kind(one).Valid() {
				return f, usageError{fmt.Errorf("audit %s: --kind %q: want command, egress, resource, behavioral or lifecycle", sub, one)}
			}
			f.Kinds = append(f.Kinds, audit.Kind(one))
		}
	}
	if s.since != "" {
		var err error
		if f.Since, err = parseSince(s.since, time.Now()); err != nil {
			return f, usageError{fmt.Errorf("audit %s: --since: %w", sub, err)}
		}
	}
	return f, nil
}

// parseSince reads --since: a duration before now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (10m, 2h) nor an RFC 3339 time", s)
}

// openLog opens file, a regular file (hostfile.Open: a FIFO neither hangs
// the command nor keeps it from seeing SIGTERM); with wait, it waits for a
// missing file to appear, and returns nil, nil when ctx ends first.
func openLog(ctx context.Context, file string, wait bool) (*os.File, error) {
	for {
		f, _, err := hostfile.Open(file)
		if err == nil || !wait || !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func location(utc bool) *time.Location {
	if utc {
		return time.UTC
	}
	return time.Local
}

func newAuditAlertsCmd() *cobra.Command {
	var asJSON, utc bool
	cmd := &cobra.Command{
		Use:   "alerts [--json] [--utc] [FILE]",
		Short: "The monitor's alerts: those in the log, and those its rules find again",
		Long: `alerts prints the alert events that the monitor wrote into the audit log, then
replays the log through the monitor's rules, with the thresholds of the policy's
"monitor" section (--policy), and prints the alerts the log should hold but
does not (a writer without a monitor, or other thresholds).

Rules: egress_deny_burst and command_deny_repeat (N denials within a window),
resource_kill, metadata_access, escape_suspected, startup_refused and
audit_repaired. alerts does not check the chain; run "airlock audit verify".`,
		Args: atMostOneFile("alerts"),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := auditFile(args)
			if err != nil {
				return err
			}
			pol, err := loadPolicy(cmd)
			if err != nil {
				return err
			}
			f, _, err := hostfile.Open(file)
			if err != nil {
				return auditFailed("alerts", file, err)
			}
			defer f.Close()
			th := monitor.ThresholdsFor(pol.Policy)
			res, err := monitor.Replay(f, th)
			if err != nil {
				return auditFailed("alerts", file, err)
			}
			if res.Damaged > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "airlock: audit alerts: %s: warning: %d damaged %s skipped; "+
					"run \"airlock audit verify\"\n", file, res.Damaged, plural(res.Damaged, "line"))
			}
			if asJSON {
				return termtext.WriteJSON(cmd.OutOrStdout(), struct {
					File string `json:"file"`
					monitor.Result
				}{file, res}, "")
			}
			printAlerts(cmd.OutOrStdout(), res, th, location(utc))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: recorded, recomputed and missing alerts")
	cmd.Flags().BoolVar(&utc, "utc", false, "show times in UTC instead of local time")
	policyflag.Add(cmd)
	return cmd
}

func printAlerts(w io.Writer, res monitor.Result, th monitor.Thresholds, loc *time.Location) {
	if len(res.Recorded) == 0 {
		fmt.Fprintf(w, "no alerts in the log (%d %s)\n", res.Events, plural(res.Events, "event"))
	}
	for _, a := range res.Recorded {
		fmt.Fprintf(w, "%s\n", audit.FormatEvent(a, loc))
	}
	if len(res.Missing) == 0 {
		return
	}
	fmt.Fprintf(w, "%d %s that the log does not hold, recomputed with the policy's thresholds "+
		"(%d egress denials or %d command denials within %gs):\n", len(res.Missing), plural(len(res.Missing), "alert"),
		th.EgressDenyBurst, th.CommandDenyRepeat, th.Window.Seconds())
	for _, a := range res.Missing {
		fmt.Fprintf(w, "+ %s\n", audit.FormatEvent(a, loc))
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
