package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

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
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("selftest: takes no arguments (got %q)", args[0])}
			}
			return nil
		},
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
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := selftest.Run(ctx, opts)
			if rep == nil {
				return &exitError{Code: exitFailed, Err: err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if werr := enc.Encode(rep); werr != nil {
					return werr
				}
			} else if werr := rep.WriteTable(out, 160); werr != nil {
				return werr
			}
			switch {
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
