package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/export"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
)

func newExportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export podman|k8s",
		Short: "Compile a tool's policy into a podman run line or Kubernetes manifests",
		Long: `export compiles one tool and task of the policy into the configuration of a
container runtime, with the policy's caps, a read-only root, uid 65534, no
capabilities, no_new_privs, airlock's seccomp filter as a seccomp profile,
an image pinned by digest, and airlock proxy as the only way out. The
contract, and what each target cannot express, is docs/export.md.`,
	}
	cmd.AddCommand(newExportPodmanCmd(), newExportK8sCmd())
	return cmd
}

func newExportPodmanCmd() *cobra.Command {
	var req export.Request
	var opts export.PodmanOptions
	var line bool
	cmd := &cobra.Command{
		Use:   "podman --tool T [--task K] --image REF [--proxy ADDR] [--seccomp-out FILE] [--line] -- CMD [ARG...]",
		Short: "Print a script that runs a command in podman with airlock proxy as its only way out",
		Long: `podman decides CMD at the command gate for tool T and prints a POSIX shell
script that runs it in a podman container: the script makes a network
namespace whose only interface is lo, serves airlock proxy for task K inside
it (none without --task: no egress), runs the container there with the
tool's caps and airlock's seccomp profile, and removes the namespace when
the container ends. The script needs root.

--seccomp-out FILE writes the seccomp profile to FILE, which the script then
names instead of carrying it. --line prints only the podman run line (it
needs --seccomp-out, and a namespace named by $AIRLOCK_NETNS in which
airlock proxy listens, as the script makes).`,
		Example: `  airlock export podman --tool run_tests --image localhost/ci@sha256:<64 hex> -- pytest -v > run.sh
  sudo AIRLOCK_PODMAN_FLAGS='--runtime runc' sh run.sh`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case req.Tool == "":
				return usageError{errors.New("export podman: --tool is required")}
			case req.Image == "":
				return usageError{errors.New("export podman: --image is required (pinned by digest)")}
			case len(args) == 0 || cmd.ArgsLenAtDash() != 0:
				return usageError{errors.New("export podman: put the command after --, e.g. -- pytest -v")}
			case line && opts.SeccompFile == "":
				return usageError{errors.New("export podman: --line needs --seccomp-out FILE (the line names the profile's file)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			pol, err := loadPolicy(cmd)
			if err != nil {
				return err
			}
			req.Command = args
			if opts.SeccompFile != "" {
				if opts.SeccompFile, err = filepath.Abs(opts.SeccompFile); err != nil {
					return fmt.Errorf("export podman: %w", err)
				}
			}
			t, err := export.Resolve(pol, req)
			if err != nil {
				return err
			}
			out, err := export.Podman(t, opts)
			if err != nil {
				return err
			}
			if opts.SeccompFile != "" {
				if err := hostfile.WriteFile(opts.SeccompFile, out.Profile, 0o644); err != nil {
					return fmt.Errorf("export podman: %w", err)
				}
			}
			if line {
				_, err = fmt.Fprintln(cmd.OutOrStdout(), out.Line)
			} else {
				_, err = fmt.Fprint(cmd.OutOrStdout(), out.Script)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Tool, "tool", "", "tool whose caps apply and whose rules decide the command")
	f.StringVar(&req.Task, "task", "", "task whose egress allowlist the proxy applies (none: no egress)")
	f.StringVar(&req.Image, "image", "", "image, pinned by digest (REGISTRY/NAME@sha256:HEX)")
	f.StringVar(&opts.Proxy, "proxy", "", "loopback address of the proxy inside the container's namespace (default "+export.DefaultProxy+")")
	f.StringVar(&opts.SeccompFile, "seccomp-out", "", "write the seccomp profile to this file")
	f.BoolVar(&line, "line", false, "print only the podman run line")
	policyflag.Add(cmd)
	return cmd
}

// exportK8sBinary is the program that holds the Kubernetes export.
const exportK8sBinary = "airlock-export"

// newExportK8sCmd runs airlock-export k8s with the same arguments. The
// Kubernetes export links the Kubernetes API types, whose package
// initialisers would cost every airlock start about half a millisecond
// (docs/export.md), so it is a program of its own: found beside this one,
// else on PATH.
func newExportK8sCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "k8s [flags] -- CMD [ARG...]",
		Short:              "Print Kubernetes manifests for a command, gated and sandboxed by airlock in the pod (runs airlock-export k8s)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := findExportBinary()
			if err != nil {
				return err
			}
			argv := append([]string{path, "k8s"}, args...)
			if err := syscall.Exec(path, argv, os.Environ()); err != nil {
				return fmt.Errorf("export k8s: run %s: %w", path, err)
			}
			return nil
		},
	}
}

// findExportBinary finds airlock-export beside the running program, else
// on PATH.
func findExportBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), exportK8sBinary)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(exportK8sBinary)
	if err != nil {
		return "", fmt.Errorf("export k8s: %s is not installed beside airlock or on PATH (go install ./cmd/airlock-export): %w", exportK8sBinary, err)
	}
	return p, nil
}
