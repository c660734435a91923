package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/selftest"
)

func newSelftestCmd() *cobra.Command {
	var (
		asJSON   bool
		families []string
		opts     selftest.Options
	)
	cmd := &cobra.Command{
		Use:   "selftest [--json] [--family F] [--audit FILE]",
		Short: "Attack live sandboxes from the inside and report which control contained each attempt",
		Long: `selftest is airlock's adversarial battery. It starts sandboxes on this host under
a policy of its own and attacks them from the inside with airlock's own binary
as the payload: command-gate tricks, direct network access, cloud metadata in
every spelling and through a rebinding resolver, host files, privilege
escalation, resource exhaustion and persistence. Each attempt names the control
expected to stop it and is judged on evidence that this control answered; one
stopped by anything else, or that could not be made, is reported as broken.

Everything the battery dials is on this host's loopback or inside the
sandbox's own network namespace: nothing leaves the host. The battery's
policy is embedded (there is no --policy; $AIRLOCK_POLICY is not used), its audit
stream is deleted afterwards unless --audit keeps it, and a residue check then
compares the host before and after: processes, cgroups, mounts, namespaces,
descriptors and files.

Run as root for the whole battery. As an unprivileged user, the attempts that
need a cgroup the host does not delegate are skipped, and the run's receipt
says why; an attempt at something this host's kernel lacks (/proc/kcore, an
IPv6 loopback, AF_VSOCK) is skipped too, and says so.

Exit status 0 only if every attempt that ran was contained by its expected
control and nothing was left behind; 1 otherwise.`,
		Example: `  airlock selftest
  airlock selftest --family network,metadata
  airlock selftest --json --audit selftest-audit.jsonl`,
		Args: noArgs("selftest: takes no arguments (got %q)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, f := range families {
				for _, name := range strings.Split(f, ",") {
					fam := selftest.Family(strings.TrimSpace(name))
					if !fam.Valid() {
						return usageError{fmt.Errorf("selftest: unknown family %q (want one of %v)", fam, selftest.Families)}
					}
					opts.Families = append(opts.Families, fam)
				}
			}
			ctx, stop := signalContext(cmd.Context(), 0)
			defer stop()
			prog := newProgress(cmd.ErrOrStderr())
			opts.OnResult = selftestProgress(prog, batterySize(opts.Families))
			rep, err := selftest.Run(ctx, opts)
			prog.done()
			if rep == nil {
				return &exitError{Code: exitFailed, Err: err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if werr := termtext.WriteJSON(out, rep, "  "); werr != nil {
					return werr
				}
			} else if werr := rep.WriteTable(out, 160); werr != nil {
				return werr
			}
			switch code := interruptedStatus(ctx); {
			case code != 0:
				return &exitError{Code: code, Err: errors.New("selftest: interrupted")}
			case err != nil:
				return &exitError{Code: exitFailed, Err: err}
			case !rep.OK:
				if asJSON {
					fmt.Fprintln(cmd.ErrOrStderr(), rep.Line())
				}
				return &exitError{Code: exitFailed}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	f.StringSliceVar(&families, "family", nil, "run only these families (repeatable or comma-separated): "+familyList())
	f.StringVar(&opts.AuditPath, "audit", "", "keep the battery's audit stream in this file (default: a temporary file, deleted)")
	f.IntVar(&opts.Parallel, "parallel", 0, "attempts run at once (default 3)")
	return cmd
}

func familyList() string {
	names := make([]string, len(selftest.Families))
	for i, f := range selftest.Families {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// selftestProgress shows each judged attempt on the progress line (nil:
// none), counted against total.
func selftestProgress(p *progress, total int) func(selftest.Result) {
	if p == nil {
		return nil
	}
	n := 0
	return func(r selftest.Result) {
		if r.Family != "preflight" {
			n++
		}
		p.show(fmt.Sprintf("airlock selftest: [%d/%d] %s: %s", n, total, r.Attempt, r.Outcome))
	}
}

// batterySize is how many attempts the battery makes of families (all
// when empty).
func batterySize(families []selftest.Family) int {
	n := 0
	for f, c := range selftest.Count() {
		if len(families) == 0 || slices.Contains(families, f) {
			n += c
		}
	}
	return n
}
