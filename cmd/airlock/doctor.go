package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/doctor"
	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Show which mechanism enforces each control on this host",
		Long: `doctor probes this host, as the user who runs it, and prints for every control
(namespaces, pivot_root, a /proc of the sandbox's own, no_new_privs,
seccomp, Landlock, cgroups, the open-files limit, the egress proxy) the mechanism that would enforce it and
its strength: strong, weak (a fallback such as an rlimit where a cgroup was
wanted) or missing. Weak and missing controls come with the reason and a fix
(unprivileged user namespaces restricted by AppArmor on Ubuntu 24.04, no
cgroup delegation, a kernel without Landlock, ...).

It then names the policy airlock would use (--policy, else $AIRLOCK_POLICY,
else the embedded default; a ./policy.json is never read unless named), with
its digest, and checks its "require" list: only a strong control meets a
requirement, exactly as "airlock run" decides before it runs anything.

It also says which program a sandbox's init runs from: airlock-init beside
this binary (checked to be trusted and of this build), or this binary
itself, and why (none beside it, or the one there refused).

Exit status 0 when the report was printed and the policy's requirements are
met on this host; 1 when one is not (airlock run would refuse with exit 125)
or the policy does not load; 2 for a usage error.`,
		Args: noArgs("doctor: takes no arguments, got %q"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: host, controls, policy requirements")
	policyflag.Add(cmd)
	return cmd
}

// doctorPolicy is the policy part of "doctor --json": where it came from
// (absent when it did not load), what it requires, and what of that this
// host does not meet.
type doctorPolicy struct {
	*policy.Info
	Require []string       `json:"require"`
	Unmet   []doctor.Unmet `json:"unmet"`
	Error   string         `json:"error,omitempty"`
}

// doctorOutput is what "doctor --json" prints.
type doctorOutput struct {
	doctor.Report
	Policy doctorPolicy `json:"policy"`
	// Init is the program a sandbox of this binary runs as its init here,
	// and why (the run receipt's "init"; docs/sandbox.md, "The small init").
	Init string `json:"init"`
	// Build is "static" (CGO_ENABLED=0, as the README installs it) or
	// "cgo" (dynamically linked; docs/sandbox.md, "Speed").
	Build string `json:"build"`
	// OK is true when the policy loaded and the host meets its requirements.
	OK bool `json:"ok"`
}

func runDoctor(cmd *cobra.Command, asJSON bool) error {
	out := doctorOutput{Report: doctor.Check(cmd.Context()), Init: sandbox.InitProgram(cmd.Context()), Build: buildKind}
	out.Policy.Require, out.Policy.Unmet = []string{}, []doctor.Unmet{}
	l, loadErr := loadPolicy(cmd)
	if loadErr != nil {
		out.Policy.Error = loadErr.Error()
	} else {
		info := l.Info()
		out.Policy.Info = &info
		out.Policy.Require, out.Policy.Unmet = orEmpty(l.Require), orEmpty(doctor.Satisfies(out.Report, l.Require))
	}
	out.OK = loadErr == nil && len(out.Policy.Unmet) == 0

	w := cmd.OutOrStdout()
	var err error
	if asJSON {
		err = termtext.WriteJSON(w, out, "  ")
	} else {
		err = printDoctor(w, out)
	}
	switch {
	case err != nil:
		return err
	case loadErr != nil:
		return &exitError{Code: exitFailed, Err: loadErr}
	case !out.OK:
		names := make([]string, len(out.Policy.Unmet))
		for i, u := range out.Policy.Unmet {
			names[i] = u.Name
		}
		return &exitError{Code: exitFailed, Err: fmt.Errorf("doctor: policy %s requires what this host does not enforce strongly: %s",
			out.Policy.Source, strings.Join(names, ", "))}
	}
	return nil
}

// printDoctor writes the human report: a table, then an explanation of
// every weak or missing control, then the policy's requirements.
func printDoctor(w io.Writer, out doctorOutput) error {
	h := out.Host
	who := fmt.Sprintf("uid %d", h.UID)
	if h.Root {
		who += " (root)"
	}
	if h.Container != "" {
		who += ", inside a container: " + h.Container
	}
	fmt.Fprintf(w, "airlock doctor: %s/%s, kernel %s, %s\n\n", h.OS, h.Arch, cmp.Or(h.Kernel, "-"), who)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTROL\tSTRENGTH\tMECHANISM")
	for _, c := range out.Controls {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Strength, c.Mechanism)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	first := true
	for _, c := range out.Controls {
		if c.Strength == doctor.Strong {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nWeak or missing:")
			first = false
		}
		fmt.Fprintf(w, "  %s (%s): %s\n", c.Name, c.Strength, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "    fix: %s\n", strings.ReplaceAll(c.Fix, "\n", "\n         "))
		}
	}
	if first {
		fmt.Fprintln(w, "\nEvery control is strong on this host.")
	}
	fmt.Fprintf(w, "\nInit: %s\n", termtext.Escape(out.Init))
	fmt.Fprintf(w, "Build: %s\n", buildLine(out.Build))

	p := out.Policy
	if p.Error != "" {
		_, err := fmt.Fprintf(w, "\nPolicy: does not load: %s\n", p.Error)
		return err
	}
	fmt.Fprintf(w, "\nPolicy: %s (%s), %s\n", p.Source, policyOrigin(*p.Info), p.Digest)
	switch {
	case len(p.Require) == 0:
		_, err := fmt.Fprintln(w, "It requires no mechanism (add \"require\" to refuse runs on hosts that lack one).")
		return err
	case len(p.Unmet) == 0:
		_, err := fmt.Fprintf(w, "It requires %s: met.\n", strings.Join(p.Require, ", "))
		return err
	}
	fmt.Fprintf(w, "It requires %s: NOT met on this host; airlock run will refuse (exit 125):\n", strings.Join(p.Require, ", "))
	for _, u := range p.Unmet {
		if u.Strength == "" { // not a control: nothing above explains it
			fmt.Fprintf(w, "  %s\n", u.Reason)
			continue
		}
		fmt.Fprintf(w, "  %s: %s (see above)\n", u.Name, u.Strength)
	}
	return nil
}

// policyOrigin says in words how the policy was chosen.
func policyOrigin(i policy.Info) string {
	switch i.Origin {
	case policy.FromFlag:
		return "named by --policy, real path " + i.Path
	case policy.FromEnv:
		return "named by $AIRLOCK_POLICY, real path " + i.Path
	}
	return "no --policy or $AIRLOCK_POLICY given"
}

// buildLine is doctor's word on a build kind.
func buildLine(kind string) string {
	if kind == "static" {
		return "static (CGO_ENABLED=0)"
	}
	return "with cgo: dynamically linked, so every start of airlock and of its init loads libc first " +
		"(a run about 1.5 ms slower), and inside a container that masks /proc runs are refused; " +
		"build with CGO_ENABLED=0 (docs/sandbox.md, \"Speed\")"
}
