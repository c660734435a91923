// Command airlock-export holds airlock's Kubernetes export (airlock export
// k8s runs it). It is a program of its own because the Kubernetes API
// types it links have package initialisers that would slow every start of
// the airlock binary (docs/export.md).
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/export"
	"github.com/airlock-sandbox/airlock/export/k8s"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/seccomp"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs the command line and returns the exit status: 0, 1 when the
// export failed, 2 for a usage mistake.
func run(args []string) int {
	root := &cobra.Command{Use: "airlock-export", SilenceUsage: true, SilenceErrors: true}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newK8sCmd())
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(os.Stderr, "airlock: %v\n", err)
	if errors.As(err, new(usageError)) {
		return 2
	}
	return 1
}

// usageError marks a mistake in the command line itself.
type usageError struct{ error }

func newK8sCmd() *cobra.Command {
	var req export.Request
	var opts k8s.Options
	var seccompOut string
	cmd := &cobra.Command{
		Use:   "k8s --tool T [--task K] --image REF [--kind pod|sandbox-template] [--warm-pool N] [--cilium] [--seccomp-out FILE] -- CMD [ARG...]",
		Short: "Print Kubernetes manifests that run a command through airlock run in a pod",
		Long: `k8s decides CMD at the command gate for tool T and prints, as one YAML stream,
a ConfigMap with the policy and a Pod (or an agent-sandbox SandboxTemplate,
and with --warm-pool a SandboxWarmPool) whose container runs airlock run for
CMD: non-root in a user namespace, no capabilities, a read-only root, the
tool's caps as resources and limits, airlock's seccomp profile (Localhost
` + k8s.SeccompProfile + `, written by --seccomp-out), and a NetworkPolicy
that allows only what airlock's proxy in the pod needs for task K (with
--cilium, a CiliumNetworkPolicy with toFQDNs instead). The task defaults to
the tool's name, as airlock run's does. See docs/export.md.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case req.Tool == "":
				return usageError{errors.New("export k8s: --tool is required")}
			case req.Image == "":
				return usageError{errors.New("export k8s: --image is required (pinned by digest)")}
			case len(args) == 0 || cmd.ArgsLenAtDash() != 0:
				return usageError{errors.New("export k8s: put the command after --, e.g. -- pytest -v")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			pol, err := policyflag.Load(cmd)
			if errors.Is(err, policyflag.ErrNoName) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if req.Task == "" {
				if _, ok := pol.EgressConfig().TaskAllowlist[req.Tool]; ok {
					req.Task = req.Tool
				}
			}
			req.Command = args
			t, err := export.Resolve(pol, req)
			if err != nil {
				return err
			}
			out, err := k8s.Export(t, opts)
			if err != nil {
				return err
			}
			if seccompOut != "" {
				if err := os.MkdirAll(filepath.Dir(seccompOut), 0o755); err != nil {
					return fmt.Errorf("export k8s: %w", err)
				}
				if err := hostfile.WriteFile(seccompOut, seccomp.EntrypointProfile(), 0o644); err != nil {
					return fmt.Errorf("export k8s: %w", err)
				}
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	policyflag.Add(cmd)
	f.StringVar(&req.Tool, "tool", "", "tool whose caps apply and whose rules decide the command")
	f.StringVar(&req.Task, "task", "", "task whose egress allowlist applies (default: the tool's name)")
	f.StringVar(&req.Image, "image", "", "image holding airlock and the command, pinned by digest (REGISTRY/NAME@sha256:HEX)")
	f.StringVar(&opts.Kind, "kind", k8s.KindPod, "what to print: pod or sandbox-template")
	f.Int32Var(&opts.WarmPool, "warm-pool", 0, "with --kind sandbox-template, a SandboxWarmPool of this many sandboxes")
	f.BoolVar(&opts.Cilium, "cilium", false, "add a CiliumNetworkPolicy with toFQDNs from the allowlist")
	f.StringVar(&opts.Namespace, "namespace", "", "namespace of the objects")
	f.StringVar(&seccompOut, "seccomp-out", "", "write the seccomp profile (for the nodes) to this file")
	return cmd
}
