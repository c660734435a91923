package changes

import (
	"strings"
)

// Git's path quoting, written by hand: no Go library reproduces it, and
// git apply parses the names back exactly as git's quote_c_style writes
// them (quote.c, with core.quotePath's default): a name holding a control
// byte, DEL, '"', '\\' or any byte of 0x80 and up is written in double
// quotes, with \a \b \t \n \v \f \r \" \\ and three-digit octal escapes
// for the rest. strconv.Quote differs (\x and \u escapes, UTF-8 kept).

// cEscaped are the bytes git writes as a backslash and the letter of
// cEscapes at the same index; any other byte it quotes is octal.
const cEscaped, cEscapes = "\a\b\t\n\v\f\r\"\\", `abtnvfr"\`

// needsQuote reports whether git quotes s.
func needsQuote(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return true
		}
	}
	return false
}

// QuotePath writes a path as git does in a patch's headers: as it is, or
// in double quotes with C escapes. Every byte outside printable ASCII is
// escaped, so a quoted path is safe to print on a terminal.
func QuotePath(p string) string {
	return quotePrefixed("", p, false)
}

// quotePrefixed quotes prefix+p as git's quote_two does for the
// "diff --git" line: the prefix ("a/", "b/") goes inside the quotes.
// force quotes a name git itself would leave as it is.
func quotePrefixed(prefix, p string, force bool) string {
	if !force && !needsQuote(p) {
		return prefix + p
	}
	var b strings.Builder
	b.WriteByte('"')
	b.WriteString(prefix)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if e := strings.IndexByte(cEscaped, c); e >= 0 {
			b.WriteByte('\\')
			b.WriteByte(cEscapes[e])
		} else if c < 0x20 || c >= 0x7f {
			b.WriteByte('\\')
			b.WriteByte('0' + c>>6)
			b.WriteByte('0' + c>>3&7)
			b.WriteByte('0' + c&7)
		} else {
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// fileLabel is a "---" or "+++" line's name: git adds a tab after a name
// holding a space (diff.c), so that GNU patch finds where it ends.
func fileLabel(label string) string {
	if strings.IndexByte(label, ' ') >= 0 {
		return label + "\t"
	}
	return label
}
