package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

func newApproveCmd() *cobra.Command {
	var (
		deny, list, asJSON bool
		reason             string
	)
	cmd := &cobra.Command{
		Use:   "approve (ID [--deny] [--reason TEXT] | --list [--json])",
		Short: "Answer an escalated command's approval request, or list the pending ones",
		Long: `approve answers an approval request that the command gate's escalate
decision made: it shows the exact request — all the approval is bound to (the
tool; the command quoted as a shell would need it, with anything unprintable
escaped; the program it runs and its SHA-256; the environment it adds; its
working directory; its stdin; its egress task, workspace and image; the
session and the policy), the rule, its reason and justification, and when it
expires — then records the answer, once. The command then runs exactly once,
when it is asked for again with --approval ID before the request expires, with
all of these the same; anything else is refused. --deny refuses it instead;
--reason says why; it is kept with the answer, for the audit stream.

--list shows the pending requests (--json: one JSON array).

The requests live in $XDG_STATE_HOME/airlock/approvals (else
~/.local/state/airlock/approvals), a directory only you can reach and that no
sandbox ever sees (docs/approvals.md).

Exit status 0 when the answer was recorded (or the list printed); 1 when the
request could not be answered (unknown, expired, already answered, or its
record altered); 2 for a mistake in the command line.`,
		Example: `  airlock approve --list
  airlock approve apr-3f2a9c0e5b7d41e6a8c2f0d9b1e4a7c3
  airlock approve apr-3f2a9c0e5b7d41e6a8c2f0d9b1e4a7c3 --deny --reason "not during the freeze"`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case list && (len(args) > 0 || deny || reason != ""):
				return usageError{errors.New("approve: --list takes no ID, --deny or --reason")}
			case !list && asJSON:
				return usageError{errors.New("approve: --json goes with --list")}
			case !list && len(args) != 1:
				return usageError{errors.New("approve: name one request ID (airlock approve --list shows them)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := approval.DefaultDir()
			if err != nil {
				return err
			}
			store, err := approval.OpenStore(dir)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if list {
				return listApprovals(out, store, asJSON)
			}
			r, _, err := store.Get(args[0])
			if err != nil {
				return err
			}
			showRequest(out, r)
			a := approval.Answer{Allow: !deny, Reason: reason, By: fmt.Sprintf("operator uid %d via airlock approve", os.Getuid())}
			if err := store.Answer(r.ID, a); err != nil {
				return err
			}
			verdict := "approved"
			if deny {
				verdict = "denied"
			}
			fmt.Fprintf(out, "%s: %s by %s\n", verdict, r.ID, a.By)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&deny, "deny", false, "refuse the request instead of approving it")
	f.StringVar(&reason, "reason", "", "why, in your words (recorded with the answer)")
	f.BoolVar(&list, "list", false, "list the pending requests")
	f.BoolVar(&asJSON, "json", false, "with --list: print one JSON array")
	return cmd
}

// showRequest prints every field an operator decides on, each escaped:
// all an approval is bound to (most of it the agent's choice), then the
// rule, its reason and justification, and the expiry.
func showRequest(w io.Writer, r approval.Request) {
	line := func(name, v string) { fmt.Fprintf(w, "  %-18s %s\n", name+":", v) }
	fmt.Fprintf(w, "request %s\n", r.ID)
	for _, f := range r.Bound() {
		line(f.Name, f.Value)
	}
	line("rule", termtext.Clip(r.Rule, -1))
	line("reason", termtext.Clip(r.Reason, -1))
	if r.Justification != "" {
		line("justification", termtext.Clip(r.Justification, -1))
	}
	left := "expired"
	if d := time.Until(r.Expires); d > 0 {
		left = "in " + d.Round(time.Second).String()
	}
	line("expires", fmt.Sprintf("%s (%s)", r.Expires.Format(time.RFC3339), left))
}

// listedRequest is one entry of approve --list --json: the request, and
// each field it is bound to as the text listing shows it, escaped and
// exact (JSON cannot carry an argument, a variable or a path that is not
// UTF-8; the shown line can).
type listedRequest struct {
	approval.Request
	Shown map[string]string `json:"shown"`
}

func listApprovals(w io.Writer, store *approval.Store, asJSON bool) error {
	pending, err := store.List()
	if asJSON {
		entries := make([]listedRequest, len(pending))
		for i, r := range pending {
			entries[i] = listedRequest{r, map[string]string{}}
			for _, f := range r.Bound() {
				entries[i].Shown[f.Name] = f.Value
			}
		}
		if werr := termtext.WriteJSON(w, entries, "  "); werr != nil {
			return werr
		}
		return err
	}
	if len(pending) == 0 && err == nil {
		fmt.Fprintln(w, "no pending approval requests")
	}
	for i, r := range pending {
		if i > 0 {
			fmt.Fprintln(w)
		}
		showRequest(w, r)
	}
	return err
}
