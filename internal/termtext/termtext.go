// Package termtext makes text that airlock did not write safe to print on
// an operator's terminal: the audit timeline's lines, refusal lines and
// `airlock approve`'s view of a request. An agent controls command names,
// arguments and tool names; printed raw, an escape sequence in one could
// move the cursor, rewrite the line above or disguise a command, and a
// bidirectional override could show "rm -rf /" as something harmless
// (CVE-2021-42574).
package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Clean escapes control characters, invalid UTF-8 and the bidirectional
// overrides that can disguise text, and cuts s to at most n runes with an
// ellipsis (n < 0: no cut). What it returns has no byte that a terminal
// interprets.
func Clean(s string, n int) string {
	var b strings.Builder
	count := 0
	for i := 0; i < len(s); {
		if count == n {
			b.WriteString("…")
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) || isBidi(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		i += size
		count++
	}
	return b.String()
}

// isBidi reports the bidirectional embedding, override and isolate
// characters.
func isBidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f
}

// Argv renders a command and its arguments as one line of shell (bash)
// that runs exactly that argv: a plain word bare, one with shell
// characters in single quotes, and one with anything unprintable
// (control characters, invalid UTF-8, bidirectional and other format
// characters) in $'…' with escapes. It is lossless and has no byte that a
// terminal interprets. An argument no shell can hold (a NUL byte) is
// shown Go-quoted.
func Argv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = strconv.Quote(a)
		}
		parts[i] = q
	}
	return strings.Join(parts, " ")
}
