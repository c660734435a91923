package strict

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is a problem in a file, located by line and column: Decode
// returns one for a file that does not parse, and a validator returns
// Errors, which Positions.Place locates.
type Error struct {
	File string // file name as given, or "<embedded>"
	Line int    // 1-based; 0 when the problem has no single place
	Col  int    // 1-based byte column; 0 when only the line is known
	Path string // the field, e.g. toolScopes.run_tests.allow[0].command
	Msg  string
	Hint string // how to fix it, when known
}

// Problem returns an Error about the field at path, to be located by
// Positions.Place.
func Problem(path, msg, hint string) *Error { return &Error{Path: path, Msg: msg, Hint: hint} }

func errorAt(at pos, msg, hint string) *Error {
	return &Error{Line: at.line, Col: at.col, Msg: msg, Hint: hint}
}

// Error formats as "file:line:col: path: message" (or "file:line:" when
// the column is not known) with the hint on its own line, the way
// compilers report.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	switch {
	case e.Line > 0 && e.Col > 0:
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	case e.Line > 0:
		fmt.Fprintf(&b, ":%d", e.Line) // the YAML library reports lines only
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

// Errors is every validation problem found in one file, in file order.
type Errors []*Error

// Error joins the problems one per line.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap exposes the individual problems to errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// PlainText reports whether s is valid UTF-8 with no control characters
// and no leading or trailing white space: what names in airlock's files
// (tools, rules, tasks, steps) must be, since they appear in reasons and
// the audit stream.
func PlainText(s string) bool {
	if !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
