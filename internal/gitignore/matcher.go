package gitignore

import (
	"errors"
	"strings"
)

// ErrBudget is the error of Excluded once the Matcher has spent the
// steps it was given: from then on it decides nothing.
var ErrBudget = errors.New("gitignore: the matching budget is spent")

// Matcher decides which paths its rules exclude. It is not safe for
// concurrent use.
type Matcher struct {
	lists map[string][]Pattern // each directory's patterns ("" the root's)
	last  []Pattern            // consulted after every directory's, as info/exclude
	dirs  map[string]bool      // the directories decided so far
	left  int64                // steps left
	s     scratch
}

// NewMatcher returns a Matcher with no rules that spends at most steps
// on matching (a pattern of n tokens against a path of m bytes takes
// up to (n+1)*(m+1)).
func NewMatcher(steps int64) *Matcher {
	return &Matcher{lists: map[string][]Pattern{}, dirs: map[string]bool{}, left: steps}
}

// Add adds the patterns of an ignore file in the directory dir ("" for
// the root, else a clean "/"-separated path): they apply to the paths
// beneath dir, before those of the directories above it, and a later
// pattern before an earlier one, as git reads .gitignore files.
func (m *Matcher) Add(dir string, ps []Pattern) {
	m.lists[dir] = append(m.lists[dir], ps...)
	clear(m.dirs)
}

// AddLast adds patterns that apply from the root after every
// directory's, as git reads $GIT_DIR/info/exclude.
func (m *Matcher) AddLast(ps []Pattern) {
	m.last = append(m.last, ps...)
	clear(m.dirs)
}

// Empty reports whether the Matcher has no pattern.
func (m *Matcher) Empty() bool { return len(m.lists) == 0 && len(m.last) == 0 }

// Excluded reports whether the rules exclude p, a clean "/"-separated
// path relative to the root, a directory when isDir is set: when a
// directory above it is excluded (and then nothing can include p again),
// or when the last pattern that matches p, in git's order, does not
// start with "!". It fails with ErrBudget once the Matcher's steps are
// spent.
func (m *Matcher) Excluded(p string, isDir bool) (bool, error) {
	if m.left < 0 {
		return false, ErrBudget
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		if ex, err := m.dir(p[:i]); err != nil || ex {
			return ex, err
		}
	}
	return m.decide(p, isDir)
}

// dir decides the directory d by its own name, once.
func (m *Matcher) dir(d string) (bool, error) {
	if ex, ok := m.dirs[d]; ok {
		return ex, nil
	}
	ex, err := m.decide(d, true)
	if err == nil {
		m.dirs[d] = ex
	}
	return ex, err
}

// decide matches p against the patterns of the directories above it,
// the deepest first, then the last ones: the first that matches, from
// the end of each list, decides.
func (m *Matcher) decide(p string, isDir bool) (bool, error) {
	parent, name := "", p
	if k := strings.LastIndexByte(p, '/'); k >= 0 {
		parent, name = p[:k], p[k+1:]
	}
	for base := parent; ; {
		if ps := m.lists[base]; len(ps) > 0 {
			rel := p
			if base != "" {
				rel = p[len(base)+1:]
			}
			if ex, ok, err := m.first(ps, rel, name, isDir); ok || err != nil {
				return ex, err
			}
		}
		if base == "" {
			break
		}
		base = base[:max(strings.LastIndexByte(base, '/'), 0)]
	}
	ex, _, err := m.first(m.last, p, name, isDir)
	return ex, err
}

// first finds the last pattern of ps that matches (rel is the path
// beneath the list's directory, name its last element) and says
// whether it excludes.
func (m *Matcher) first(ps []Pattern, rel, name string, isDir bool) (excluded, decided bool, err error) {
	for i := len(ps) - 1; i >= 0; i-- {
		pt := &ps[i]
		if pt.dirOnly && !isDir {
			continue
		}
		text := rel
		if pt.basename {
			text = name
		}
		ok, err := m.match(pt, text)
		if err != nil {
			return false, false, err
		}
		if ok {
			return !pt.negate, true, nil
		}
	}
	return false, false, nil
}

// match matches one pattern against text, within the budget.
func (m *Matcher) match(pt *Pattern, text string) (bool, error) {
	m.left -= int64(len(text)) + 1
	switch {
	case m.left < 0:
		return false, ErrBudget
	case pt.never:
		return false, nil
	case pt.hasLiteral:
		return text == pt.literal, nil
	case pt.hasSuffix:
		return strings.HasSuffix(text, pt.suffix), nil
	case !strings.HasPrefix(text, pt.prefix), !strings.HasSuffix(text, pt.tail):
		return false, nil
	}
	toks, text := pt.toks[len(pt.prefix):], text[len(pt.prefix):]
	if m.left -= int64(len(toks)+1) * int64(len(text)+1); m.left < 0 {
		return false, ErrBudget
	}
	return m.s.run(toks, text), nil
}

// scratch is the working memory of run.
type scratch struct{ a, b, da, db []bool }

// run reports whether toks match all of text, by dynamic programming
// from the end of both: a column per byte of text, a cell per token, so
// that no pattern costs more than (tokens+1)*(bytes+1) steps, whatever
// its stars.
func (s *scratch) run(toks []token, text string) bool {
	n, t := len(text), len(toks)
	if cap(s.a) < t+1 {
		s.a, s.b, s.da, s.db = make([]bool, t+1), make([]bool, t+1), make([]bool, t+1), make([]bool, t+1)
	}
	// next[i]: toks[i:] match text[j+1:]; cur[i]: toks[i:] match
	// text[j:]. dnext and dcur: for a dirs token at i, text from there
	// holds a '/' after which toks[i+1:] match.
	next, cur, dnext, dcur := s.a[:t+1], s.b[:t+1], s.da[:t+1], s.db[:t+1]
	clear(next)
	clear(dnext)
	for j := n; j >= 0; j-- {
		in := j < n
		var c byte
		if in {
			c = text[j]
		}
		cur[t] = !in
		for i := t - 1; i >= 0; i-- {
			tk := &toks[i]
			switch tk.kind {
			case lit:
				cur[i] = in && c == tk.b && next[i+1]
			case one:
				cur[i] = in && c != '/' && next[i+1]
			case set:
				cur[i] = in && tk.set.has(c) && next[i+1]
			case star:
				cur[i] = cur[i+1] || in && c != '/' && next[i]
			case all:
				cur[i] = cur[i+1] || in && next[i]
			case dirs:
				dcur[i] = in && (c == '/' && next[i+1] || dnext[i])
				cur[i] = cur[i+1] || dcur[i]
			}
		}
		next, cur = cur, next
		dnext, dcur = dcur, dnext
	}
	return next[0]
}
