package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

func newAuditExportCmd() *cobra.Command {
	var (
		format string
		sel    selection
	)
	cmd := &cobra.Command{
		Use:   "export --format ocsf [--run ID] [--session ID] [--tool T] [--kind K] [--since T] [FILE]",
		Short: "Write the audit log's events for a SIEM: OCSF, one JSON object a line",
		Long: `export writes the events of the audit log as Open Cybersecurity Schema Framework
(OCSF ` + audit.OCSFVersion + `) events, one JSON object a line, on standard output:
command decisions, launches and outcomes as Process Activity (1007), egress
decisions as HTTP Activity (4002) or Network Activity (4001), monitor alerts as
Detection Finding (2004). Each carries the record's seq and hash (unmapped.airlock)
so that a SIEM event can be traced to a verifiable line. A string that is not
UTF-8 is written with \xNN for each such byte, its exact bytes in base64 in
unmapped.airlock.bytes, keyed by the attribute's path. The chain is checked as
the log is read: export stops at the first bad line, exit 1, having written only
verified events. The filters are timeline's.`,
		Example: `  airlock audit export --format ocsf --since 24h > airlock.ocsf.jsonl`,
		Args:    atMostOneFile("export"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "ocsf" {
				return usageError{errors.New("audit export: --format ocsf is the one format")}
			}
			filter, err := sel.filter("export")
			if err != nil {
				return err
			}
			file, err := auditFile(args)
			if err != nil {
				return err
			}
			f, _, err := hostfile.Open(file)
			if err != nil {
				return auditFailed("export", file, err)
			}
			defer f.Close()
			host, _ := os.Hostname()
			// Past the terminal's escaping: the events are JSON, escaped
			// as JSON (termtext.JSON).
			w := bufio.NewWriter(termtext.Raw(cmd.OutOrStdout()))
			_, _, err = audit.ExportOCSF(w, f, filter, audit.OCSFSource{Host: host, Version: buildVersion()})
			if ferr := w.Flush(); err == nil && ferr != nil {
				err = fmt.Errorf("write: %w", ferr)
			}
			if err != nil {
				return auditFailed("export", file, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "the format: ocsf")
	sel.add(cmd)
	return cmd
}

// buildVersion is airlock's module version, "" when unknown (a build from
// a work tree says "(devel)").
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return ""
}
