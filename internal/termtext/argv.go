package termtext

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Argv renders a command and its arguments as one line of shell (bash)
// that runs exactly that argv: a plain word bare, one with shell
// characters in single quotes, and one with anything unprintable
// (control characters, invalid UTF-8, bidirectional and other format
// characters) in $'…' with escapes. It is lossless (a \u escape is read
// back as UTF-8 by a bash in a UTF-8 locale, as terminals showing it are)
// and has no byte that a terminal interprets. An argument no shell can hold (a NUL byte) is
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
