package selftest

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Passed is the outcome of a preflight check that passed. Preflight
// checks are not attempts: they show the battery can judge this host (the
// payload runs inside a sandbox, the proxy reaches an allowed upstream).
const Passed Outcome = "ok"

// Report is the battery's outcome on this host.
type Report struct {
	// Host describes where the battery ran.
	Host Host `json:"host"`
	// Preflight are the checks that the battery can judge this host.
	Preflight []Result `json:"preflight"`
	// Attempts are the attacks, in battery order.
	Attempts []Result `json:"attempts"`
	// Residue is what the battery left on the host: nothing, when clean.
	Residue Residue `json:"residue"`
	// Summary counts the attempts by outcome.
	Summary Summary `json:"summary"`
	// OK is true when every attempt that ran was contained by its
	// expected control, every skip is explained by the run's receipt,
	// the preflight passed and the residue check is clean.
	OK bool `json:"ok"`
	// AuditPath is the kept audit stream, "" when it was deleted.
	AuditPath string `json:"auditPath,omitempty"`
	// WallMs is how long the whole battery took.
	WallMs int64 `json:"wallMs"`
}

// Host describes the host and user the battery ran as.
type Host struct {
	// OS and Arch are the Go names of the system and architecture.
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// Kernel is the kernel's release.
	Kernel string `json:"kernel"`
	// UID is the effective uid the battery ran as.
	UID int `json:"uid"`
	// Rootless is true when that uid is not 0.
	Rootless bool `json:"rootless"`
	// Receipt is the mechanism of each control on the preflight's run.
	Receipt map[string]string `json:"receipt,omitempty"`
}

// Summary counts attempts by outcome.
type Summary struct {
	// Total is the number of attempts; the others count each outcome.
	Total     int `json:"total"`
	Contained int `json:"contained"`
	Escaped   int `json:"escaped"`
	Broken    int `json:"broken"`
	Skipped   int `json:"skipped"`
}

// ResidueCheck is one comparison of the residue check.
type ResidueCheck struct {
	// Name is processes, cgroups, mounts, namespaces, descriptors or files.
	Name string `json:"name"`
	// Clean is true when nothing of the battery was left.
	Clean bool `json:"clean"`
	// Detail says what was looked at, or what was left.
	Detail string `json:"detail"`
}

// Residue is the residue check's outcome.
type Residue struct {
	// Clean is true when every check is.
	Clean bool `json:"clean"`
	// Checks are the comparisons, one per kind of residue.
	Checks []ResidueCheck `json:"checks"`
}

// residueChecks collects the residue check's comparisons.
type residueChecks []ResidueCheck

// add records one comparison: clean when nothing was left, with what was
// looked at, else with what was left.
func (cs *residueChecks) add(name string, left []string, looked string) {
	c := ResidueCheck{Name: name, Clean: len(left) == 0, Detail: looked}
	if !c.Clean {
		c.Detail = "left: " + strings.Join(left, "; ")
	}
	*cs = append(*cs, c)
}

// residue is the check's outcome: clean when every comparison is.
func (cs residueChecks) residue() Residue {
	return Residue{Clean: !slices.ContainsFunc(cs, func(c ResidueCheck) bool { return !c.Clean }), Checks: cs}
}

// summarize counts the attempts and says whether the report is OK.
func (r *Report) summarize() {
	s := Summary{Total: len(r.Attempts)}
	for _, a := range r.Attempts {
		switch a.Outcome {
		case Contained:
			s.Contained++
		case Escaped:
			s.Escaped++
		case Skipped:
			s.Skipped++
		default:
			s.Broken++
		}
	}
	r.Summary = s
	r.OK = s.Escaped == 0 && s.Broken == 0 && r.Residue.Clean && s.Total > 0
	for _, p := range r.Preflight {
		r.OK = r.OK && p.Outcome == Passed
	}
}

// Line is the summary line.
func (r *Report) Line() string {
	s := r.Summary
	res := "clean"
	if !r.Residue.Clean {
		res = "NOT CLEAN"
	}
	verdict := "every attempt was contained by its expected control"
	if !r.OK {
		verdict = "FAILED"
	}
	return fmt.Sprintf("selftest: %d attempts: %d contained, %d ESCAPED, %d broken, %d skipped; residue %s; %.1fs: %s",
		s.Total, s.Contained, s.Escaped, s.Broken, s.Skipped, res, float64(r.WallMs)/1000, verdict)
}

// WriteTable writes the report for a person: preflight, one row per
// attempt, the residue check and the summary line. width bounds the
// evidence column (0: no bound).
func (r *Report) WriteTable(w io.Writer, width int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "airlock selftest on %s/%s, kernel %s, uid %d%s\n\n", r.Host.OS, r.Host.Arch, r.Host.Kernel, r.Host.UID, rootless(r.Host.Rootless))
	if len(r.Preflight) > 0 {
		fmt.Fprintln(tw, "PREFLIGHT\tOUTCOME\tEVIDENCE")
		for _, p := range r.Preflight {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Attempt, p.Outcome, clip(p.Evidence, width))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "ATTEMPT\tFAMILY\tCONTROL\tOUTCOME\tEVIDENCE")
	for _, a := range r.Attempts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Attempt, a.Family, a.Control, a.Outcome, clip(a.Evidence, width))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "RESIDUE\tCLEAN\tDETAIL")
	for _, c := range r.Residue.Checks {
		fmt.Fprintf(tw, "%s\t%t\t%s\n", c.Name, c.Clean, clip(c.Detail, width))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.AuditPath != "" {
		fmt.Fprintf(w, "\naudit stream kept in %s\n", r.AuditPath)
	}
	_, err := fmt.Fprintf(w, "\n%s\n", r.Line())
	return err
}

func rootless(b bool) string {
	if b {
		return " (rootless)"
	}
	return ""
}

// clip puts s on one line of at most n runes (n <= 0: no bound).
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); n > 0 && len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
