package findings

import (
	"strconv"
	"unicode/utf8"
)

// printable reports whether s is valid UTF-8 with no control byte, no
// terminal escape and no invisible format character (a bidirectional
// override): a name that is not never reaches the host, where it would
// reach whoever lists the directory.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// Quote returns s as it is when printable, else Go-quoted, so that
// a name the sandbox chose never reaches a terminal raw.
func Quote(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}
