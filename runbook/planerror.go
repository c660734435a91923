package runbook

import (
	"fmt"
	"strings"
)

// PlanError is a problem in a plan file, located by line and column.
// ParsePlan returns one *PlanError for a file that does not parse, and
// PlanErrors for a plan that parses but breaks a rule.
type PlanError struct {
	File string // the file name as given
	Line int    // 1-based; 0 when the problem has no single place
	Col  int    // 1-based byte column
	Path string // the field, e.g. steps[2].command
	Msg  string
	Hint string // how to fix it, when known
}

// Error formats as "file:line:col: path: message", with the hint on its
// own line, the way compilers report.
func (e *PlanError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString("\n\thint: ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// PlanErrors is every rule a parsed plan breaks, in file order.
type PlanErrors []*PlanError

// Error joins the problems one per line.
func (es PlanErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap returns the problems, for errors.As.
func (es PlanErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
