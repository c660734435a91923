package gitignore

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Pattern is one compiled pattern of an ignore file or list.
type Pattern struct {
	negate   bool // "!": a match includes the path again
	dirOnly  bool // a trailing "/": it matches directories only
	basename bool // no "/" but a trailing one: it matches a path's last element, at any depth
	never    bool // git can never match it
	// literal is the whole pattern when it has no wildcard, matched by
	// comparison; suffix is what follows a basename pattern's leading
	// "*" when nothing else is a wildcard, matched as the name's end.
	literal, suffix string
	hasLiteral      bool
	hasSuffix       bool
	// prefix is the bytes of the leading tokens that are plain bytes,
	// tail those of the trailing ones: a path that does not start with
	// the one and end with the other is not matched further.
	prefix, tail string
	toks         []token
}

// kind is what one token of a pattern matches.
type kind uint8

const (
	lit  kind = iota // one byte, itself
	one              // "?": one byte other than '/'
	set              // a bracket expression: one byte of its set, never '/'
	star             // "*": bytes other than '/', none included
	all              // "**" alone or after a '/', at the end (or before "\/"): any bytes
	dirs             // "**/" alone or after a '/': nothing, or any bytes ending in '/'
)

type token struct {
	kind kind
	b    byte     // lit's byte
	set  *byteSet // set's bytes
}

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(b byte)      { s[b>>6] |= 1 << (b & 63) }
func (s *byteSet) has(b byte) bool { return s[b>>6]&(1<<(b&63)) != 0 }

// globSpecial reports whether git's wildmatch gives c a meaning
// (is_glob_special).
func globSpecial(c byte) bool { return c == '*' || c == '?' || c == '[' || c == '\\' }

// parse compiles a pattern as git's parse_path_pattern reads one line of
// an ignore file, its trailing spaces already trimmed.
func parse(p string) Pattern {
	var pt Pattern
	if strings.HasPrefix(p, "!") {
		pt.negate, p = true, p[1:]
	}
	if strings.HasSuffix(p, "/") {
		pt.dirOnly, p = true, p[:len(p)-1]
	}
	pt.basename = !strings.Contains(p, "/")
	if !pt.basename {
		p = strings.TrimPrefix(p, "/") // match_pathname: anchored at its directory
	}
	simple := len(p)
	for i := 0; i < len(p); i++ {
		if globSpecial(p[i]) {
			simple = i
			break
		}
	}
	switch {
	case simple == len(p):
		pt.literal, pt.hasLiteral = p, true
	case pt.basename && p[0] == '*' && !strings.ContainsAny(p[1:], "*?[\\"):
		pt.suffix, pt.hasSuffix = p[1:], true
	}
	pt.prefix = p[:simple]
	var ok bool
	if pt.toks, ok = tokenize(p); !ok {
		pt.never = true
	}
	var tail []byte
	for i := len(pt.toks) - 1; i >= len(pt.prefix) && pt.toks[i].kind == lit; i-- {
		tail = append(tail, pt.toks[i].b)
	}
	slices.Reverse(tail)
	pt.tail = string(tail)
	return pt
}

// tokenize reads a pattern's wildcards as git's wildmatch does with
// WM_PATHNAME; ok is false when wildmatch could never match it.
func tokenize(p string) (toks []token, ok bool) {
	for i := 0; i < len(p); {
		switch c := p[i]; c {
		case '\\':
			if i+1 == len(p) {
				return nil, false // a trailing backslash matches nothing
			}
			toks = append(toks, token{kind: lit, b: p[i+1]})
			i += 2
		case '?':
			toks = append(toks, token{kind: one})
			i++
		case '[':
			s, end, ok := parseSet(p, i)
			if !ok {
				return nil, false
			}
			toks = append(toks, token{kind: set, set: s})
			i = end
		case '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			k := star
			// "**" means more than "*" only between slashes (or the
			// pattern's ends): otherwise it is "*".
			if j-i > 1 && (i == 0 || p[i-1] == '/') {
				switch {
				case j == len(p), p[j] == '\\' && j+1 < len(p) && p[j+1] == '/':
					k = all
				case p[j] == '/':
					k, j = dirs, j+1
				}
			}
			toks = append(toks, token{kind: k})
			i = j
		default:
			toks = append(toks, token{kind: lit, b: c})
			i++
		}
	}
	return toks, true
}

// parseSet reads the bracket expression that starts at p[i] ('['): its
// set and the index after its closing ']'. ok is false where wildmatch
// gives up on the whole pattern: no closing ']', a backslash at the end,
// an unknown [:class:].
func parseSet(p string, i int) (s *byteSet, end int, ok bool) {
	s = new(byteSet)
	i++
	negated := i < len(p) && (p[i] == '!' || p[i] == '^')
	if negated {
		i++
	}
	prev := -1 // the last single byte, which a '-' can make a range's start
	for first := true; ; first = false {
		if i >= len(p) {
			return nil, 0, false
		}
		c := p[i]
		switch {
		case c == ']' && !first:
			if negated {
				for k := range s {
					s[k] = ^s[k]
				}
			}
			s[0] &^= 1 << '/' // never '/' (WM_PATHNAME)
			return s, i + 1, true
		case c == '\\':
			if i++; i == len(p) {
				return nil, 0, false
			}
			s.add(p[i])
			prev = int(p[i])
		case c == '-' && prev >= 0 && i+1 < len(p) && p[i+1] != ']':
			i++
			hi := p[i]
			if hi == '\\' {
				if i++; i == len(p) {
					return nil, 0, false
				}
				hi = p[i]
			}
			for b := prev; b <= int(hi); b++ {
				s.add(byte(b))
			}
			prev = -1
		case c == '[' && i+1 < len(p) && p[i+1] == ':':
			name := i + 2
			q := strings.IndexByte(p[name:], ']')
			if q < 0 {
				return nil, 0, false
			}
			q += name
			if q-name < 1 || p[q-1] != ':' {
				// Not "[:name:]": the '[' is a byte of the set, and
				// the ':' is read next.
				s.add('[')
				prev = '['
				break
			}
			if !addClass(s, p[name:q-1]) {
				return nil, 0, false
			}
			i, prev = q, -1
		default:
			s.add(c)
			prev = int(c)
		}
		i++
	}
}

// addClass adds the bytes of the POSIX class name, as git's locale-free
// ctype reads them (ASCII only); false for a name it does not know.
func addClass(s *byteSet, name string) bool {
	var in func(c byte) bool
	switch name {
	case "alnum":
		in = func(c byte) bool { return isAlpha(c) || isDigit(c) }
	case "alpha":
		in = isAlpha
	case "blank":
		in = func(c byte) bool { return c == ' ' || c == '\t' }
	case "cntrl":
		in = func(c byte) bool { return c < 0x20 || c == 0x7f }
	case "digit":
		in = isDigit
	case "graph":
		in = func(c byte) bool { return c > 0x20 && c < 0x7f }
	case "lower":
		in = func(c byte) bool { return c >= 'a' && c <= 'z' }
	case "print":
		in = func(c byte) bool { return c >= 0x20 && c < 0x7f }
	case "punct":
		in = func(c byte) bool { return c > 0x20 && c < 0x7f && !isAlpha(c) && !isDigit(c) }
	case "space":
		in = func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	case "upper":
		in = func(c byte) bool { return c >= 'A' && c <= 'Z' }
	case "xdigit":
		in = func(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	default:
		return false
	}
	for c := range 0x80 {
		if in(byte(c)) {
			s.add(byte(c))
		}
	}
	return true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// ParseFile returns the patterns of an ignore file, read as git reads
// one: a UTF-8 byte order mark skipped, one pattern a line (a "\r"
// before the "\n" dropped, a line ending at a NUL byte), empty lines
// and those starting with "#" skipped, trailing spaces trimmed unless
// escaped with a backslash. Patterns that can match nothing are left
// out.
func ParseFile(content []byte) []Pattern {
	content = bytes.TrimPrefix(content, []byte("\xef\xbb\xbf"))
	var out []Pattern
	for line := range bytes.SplitSeq(content, []byte("\n")) {
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if k := bytes.IndexByte(line, 0); k >= 0 {
			line = line[:k]
		}
		if pt := parse(trimTrailingSpaces(string(line))); pt.canMatch() {
			out = append(out, pt)
		}
	}
	return out
}

// trimTrailingSpaces drops the spaces at the end of a line, but not one
// escaped with a backslash nor those before it.
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			if i++; i == len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// canMatch reports whether some path could match the pattern.
func (pt *Pattern) canMatch() bool {
	return !pt.never && !(pt.hasLiteral && pt.literal == "")
}

// MaxPattern is the longest pattern Compile takes.
const MaxPattern = 1024

// Compile compiles one pattern of a list that is not a file (the
// policy's changes.exclude): the pattern as written, no line of a file,
// so no comment and no trimming. It refuses what would not do what it
// seems to: an empty pattern, one starting with "#" (a comment in a
// file: write "\#"), one ending in an unescaped space (which a file
// trims: write "\ "), a NUL byte, an element "." or ".." (a path has
// none), one longer than MaxPattern, and one git can never match (an
// unclosed bracket, an unknown [:class:], a trailing backslash).
func Compile(p string) (Pattern, error) {
	switch {
	case p == "" || p == "!" || p == "/" || p == "!/":
		return Pattern{}, errors.New("the pattern matches nothing")
	case len(p) > MaxPattern:
		return Pattern{}, fmt.Errorf("the pattern is longer than %d bytes", MaxPattern)
	case strings.IndexByte(p, 0) >= 0:
		return Pattern{}, errors.New("the pattern holds a NUL byte")
	case strings.HasPrefix(p, "#"):
		return Pattern{}, errors.New(`a pattern starting with "#" is a comment in a .gitignore file; write "\#" for a name that starts with "#"`)
	case trimTrailingSpaces(p) != p:
		return Pattern{}, errors.New(`a pattern ending in a space loses it in a .gitignore file; write "\ " for a name that ends in a space`)
	}
	for _, e := range strings.Split(strings.Trim(strings.TrimPrefix(p, "!"), "/"), "/") {
		if e == "." || e == ".." || e == "" {
			return Pattern{}, fmt.Errorf("the pattern has an element %q, which no path has", e)
		}
	}
	pt := parse(p)
	if pt.never {
		return Pattern{}, errors.New("git can never match the pattern: an unclosed [, an unknown [:class:] or a trailing backslash")
	}
	return pt, nil
}
