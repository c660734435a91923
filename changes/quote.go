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
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				b.WriteByte('\\')
				b.WriteByte('0' + c>>6)
				b.WriteByte('0' + c>>3&7)
				b.WriteByte('0' + c&7)
			} else {
				b.WriteByte(c)
			}
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

// gitRefuses says why git apply would refuse to write path p (a symbolic
// link when link is set), "" when it would not. Git refuses, whatever the
// patch, a path with a ".git" element (it would change the repository
// rather than the tree, and a hook or config written there runs on the
// host), and, with core.protectNTFS (on by default), the names NTFS takes
// for ".git" (".git " with trailing dots or spaces, "git~1", either after
// a backslash) and a symbolic link named .gitmodules (read-cache.c's
// verify_path). The check is kept a little wider than git's own (any
// link named like a file git reads, in any case), so that a patch written
// today applies with git's later, stricter versions too.
func gitRefuses(p string, link bool) string {
	elems := strings.Split(p, "/")
	for i, e := range elems {
		for _, part := range strings.Split(e, `\`) {
			switch strings.ToLower(strings.TrimRight(part, ". ")) {
			case ".git", "git~1":
				return "git apply refuses a path inside .git (it would change the repository, and run on the host), so the patch leaves it out"
			}
		}
		if link && i == len(elems)-1 {
			n := strings.ToLower(strings.TrimRight(e, ". "))
			switch {
			case n == ".gitmodules", n == ".gitattributes", n == ".gitignore", n == ".mailmap",
				strings.HasPrefix(n, "gitmod~"), strings.HasPrefix(n, "gi7eba~"):
				return "git apply refuses a symbolic link named like a file git reads, so the patch leaves it out"
			}
		}
	}
	return ""
}
