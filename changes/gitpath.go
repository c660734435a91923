package changes

import "unicode/utf8"

// The paths git apply refuses. It checks each path of a patch with
// read-cache.c's verify_path and, when one fails ("invalid path"),
// refuses the whole patch: so a change at such a path is left out of the
// patch and listed in the manifest instead. The checks here are git's,
// as verify_path makes them with core.protectNTFS (on by default) and
// core.protectHFS (on by default on macOS) both on, since the patch may
// be applied by either git:
//
//   - at the start of every element: ".git" in any case, or a name NTFS
//     takes for it — ".git" or "git~1" in any case, then only dots and
//     spaces up to the element's end, a backslash or a colon (".git. ",
//     ".git:stream") — or HFS+ does — ".git" with any of the code points
//     HFS+ ignores (U+200C, U+FEFF, ...) among its letters;
//   - after every backslash in a name (NTFS takes it for a separator):
//     NTFS's names for ".git";
//   - for a symbolic link, the same three spellings of ".gitmodules",
//     NTFS's ending at a colon or the path's end, and NTFS's short names
//     for it ("gitmod~1" to "gitmod~4", and "gi7eba~N" and its shorter
//     forms: path.c's is_ntfs_dot_generic).
//
// The check is kept a little wider than git's for links: a link named as
// .gitignore, .gitattributes or .mailmap is, in the same spellings, left
// out too (git reads them, and later versions may refuse them as it
// refuses .gitmodules). The names were learnt from git's read-cache.c,
// path.c and utf8.c; TestGitRefusesAsGit checks each case against the
// installed git apply.

// The reasons a path is refused.
const (
	refusedDotGit   = "git apply refuses a path inside .git, or one that NTFS or HFS+ takes for .git (it would change the repository, and run on the host), so the patch leaves it out"
	refusedLink     = "git apply refuses a symbolic link named .gitmodules, or one that NTFS or HFS+ takes for it, so the patch leaves it out"
	refusedLinkWide = "a symbolic link named like a file git reads (.gitignore, .gitattributes, .mailmap) is left out of the patch"
)

// dotFile is a file git reads, without its dot, and the prefix of the
// short name NTFS gives it when short names collide (path.c).
type dotFile struct{ name, short string }

var (
	gitmodules = []dotFile{{"gitmodules", "gi7eba"}}
	otherDots  = []dotFile{{"gitignore", "gi250a"}, {"gitattributes", "gi7d29"}, {"mailmap", "maba30"}}
)

// gitRefuses says why git apply would refuse to write path p (a symbolic
// link when link is set), "" when it would not.
func gitRefuses(p string, link bool) string {
	switch {
	case anywhere(p, func(rest string, start bool) bool {
		return ntfsDotGit(rest) || start && hfsDot(rest, "git")
	}):
		return refusedDotGit
	case link && anywhere(p, dotFileAt(gitmodules)):
		return refusedLink
	case link && anywhere(p, dotFileAt(otherDots)):
		return refusedLinkWide
	}
	return ""
}

// anywhere reports whether match holds at a place of p where git looks:
// the start of an element (start set) or just after a backslash. match
// gets the rest of the path from there.
func anywhere(p string, match func(rest string, start bool) bool) bool {
	for i := 0; i < len(p); i++ {
		start := i == 0 || p[i-1] == '/'
		if (start || p[i-1] == '\\') && match(p[i:], start) {
			return true
		}
	}
	return false
}

// dotFileAt matches the names NTFS and HFS+ take for one of files.
func dotFileAt(files []dotFile) func(rest string, start bool) bool {
	return func(rest string, start bool) bool {
		for _, f := range files {
			if ntfsDotFile(rest, f) || start && hfsDot(rest, f.name) {
				return true
			}
		}
		return false
	}
}

// ntfsDotGit reports whether s starts with a name NTFS takes for .git:
// ".git" or "git~1" in any case, then only dots and spaces up to the
// end, a separator or a colon.
func ntfsDotGit(s string) bool {
	var rest string
	switch {
	case hasPrefixFold(s, ".git"):
		rest = s[len(".git"):]
	case hasPrefixFold(s, "git~1"):
		rest = s[len("git~1"):]
	default:
		return false
	}
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '.', ' ':
		case '/', '\\', ':':
			return true
		default:
			return false
		}
	}
	return true
}

// ntfsDotFile reports whether s, the rest of a path, is a name NTFS takes
// for "." + f.name: that name, its short name (its first six letters, "~"
// and 1 to 4) or, when short names collide, one of the form of f.short's
// first letters, "~", a digit 1 to 9 and more digits, eight characters in
// all; in any case, then only dots and spaces up to the path's end or a
// colon. (A separator ends nothing here: it is no name of a file.)
func ntfsDotFile(s string, f dotFile) bool {
	onlyDots := func(rest string) bool {
		for i := 0; i < len(rest); i++ {
			switch rest[i] {
			case '.', ' ':
			case ':':
				return true
			default:
				return false
			}
		}
		return true
	}
	if len(s) > 0 && s[0] == '.' && hasPrefixFold(s[1:], f.name) {
		return onlyDots(s[1+len(f.name):])
	}
	if len(s) < 8 {
		return false
	}
	if hasPrefixFold(s, f.name[:6]) && s[6] == '~' && s[7] >= '1' && s[7] <= '4' {
		return onlyDots(s[8:])
	}
	tilde := false
	for i := 0; i < 8; i++ {
		switch c := s[i]; {
		case tilde:
			if c < '0' || c > '9' {
				return false
			}
		case c == '~':
			if i++; s[i] < '1' || s[i] > '9' {
				return false
			}
			tilde = true
		case i >= 6 || lowerASCII(c) != f.short[i]:
			return false
		}
	}
	return onlyDots(s[8:])
}

// hfsDot reports whether s, the rest of a path from an element's start,
// starts with an element HFS+ takes for "." + name: the dot and name in
// any case, among them any of the code points HFS+ ignores, up to the
// element's end. Bytes that are not UTF-8 there count as its end, as git
// counts them.
func hfsDot(s, name string) bool {
	next := func() rune {
		for {
			if s == "" {
				return 0
			}
			r, n := utf8.DecodeRuneInString(s)
			if r == utf8.RuneError && n <= 1 || r == 0xfffe || r == 0xffff {
				s = ""
				return 0
			}
			s = s[n:]
			if !hfsIgnored(r) {
				return r
			}
		}
	}
	if next() != '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if r := next(); r >= utf8.RuneSelf || lowerASCII(byte(r)) != name[i] {
			return false
		}
	}
	r := next()
	return r == 0 || r == '/'
}

// hfsIgnored reports whether HFS+ leaves r out of a name (utf8.c's
// next_hfs_char): joiners, direction marks and the byte order mark.
func hfsIgnored(r rune) bool {
	switch r {
	case 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f, 0xfeff:
		return true
	}
	return false
}

// hasPrefixFold reports whether s starts with prefix, a lower-case ASCII
// word, in any ASCII case (as git's strncasecmp; no Unicode folding).
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lowerASCII(s[i]) != prefix[i] {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
