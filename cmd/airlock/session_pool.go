package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

func newSessionPoolCmd() *cobra.Command {
	var (
		spec      holder.PoolSpec
		auditFile string
		stop      bool
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "pool --size N [--task K] [--image PATH@sha256:D] [--audit FILE] [--json] | pool --stop",
		Short: "Keep sessions' sandboxes built ahead, for session start --pool",
		Long: `pool starts this user's session pool: a background holder that keeps --size
sandboxes (1 to 16) built ahead for the policy, --task and --image, and opens a
session on one for each "airlock session start --pool", holding it as a session's
own holder would (session exec, changes and stop work as for any session). Each
sandbox serves one session and is torn down with it; the pool builds another.
A session for another task or image is opened cold, by the pool's holder.
--stop closes every session the pool holds and the pool. See docs/sessions.md.

Exit status 0 when the pool started (or stopped), 125 when it could not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !stop && (spec.Size < 1 || spec.Size > enforcer.MaxPool) {
				return usageError{fmt.Errorf("session pool: --size %d: want 1 to %d", spec.Size, enforcer.MaxPool)}
			}
			dir, err := holder.Dir()
			if err != nil {
				return &exitError{Code: exitSetup, Err: fmt.Errorf("session pool: %w", err)}
			}
			var info holder.Info
			if stop {
				info, err = holder.StopPool(dir)
			} else {
				info, err = startHolder(cmd, spec.Task, auditFile, holder.Config{Dir: dir, Pool: &spec})
			}
			if err != nil {
				return &exitError{Code: exitSetup, Err: fmt.Errorf("session pool: %w", err)}
			}
			if asJSON {
				return termtext.WriteJSON(cmd.OutOrStdout(), info, "")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&spec.Size, "size", 0, "how many sandboxes to keep built, 1 to 16")
	f.StringVar(&spec.Task, "task", "", "egress task of the sessions it serves (default: none, no destination)")
	f.StringVar(&spec.Image, "image", "", "the sessions' pinned image, PATH@sha256:DIGEST, verified once")
	f.StringVar(&auditFile, "audit", "", "audit file (default: $AIRLOCK_AUDIT, else $XDG_STATE_HOME/airlock/audit.jsonl)")
	f.BoolVar(&stop, "stop", false, "stop the pool: close every session it holds and tear its sandboxes down")
	f.BoolVar(&asJSON, "json", false, "print the pool as one JSON object")
	policyflag.Add(cmd)
	return cmd
}

// startPooled asks the running pool for a session under the policy the
// command line would use.
func startPooled(cmd *cobra.Command, req enforcer.SessionRequest) (holder.Info, error) {
	if cmd.Flags().Changed("audit") {
		return holder.Info{}, errors.New("--pool: the session is recorded in the pool's audit log; --audit does not apply")
	}
	pol, err := loadPolicy(cmd)
	if err != nil {
		return holder.Info{}, err
	}
	warnTask(cmd, pol.Policy, req.Task)
	if err := resolveSession(&req); err != nil {
		return holder.Info{}, err
	}
	dir, err := holder.Dir()
	if err != nil {
		return holder.Info{}, err
	}
	return holder.OpenPooled(dir, req, pol.Digest)
}
