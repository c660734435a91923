package cmdgate

import (
	"path"
	"strings"

	"github.com/airlock-sandbox/airlock/decision"
)

// word is one argument of a command found in a script, as the gate knows
// it before the script runs: its value, or, when it holds an expansion
// ($x, a glob, a leading ~), unknown: any number of fields of any text.
type word struct {
	text  string // the value when known, else the word as written
	known bool
	glob  string // an unknown word's pattern, when it is a glob and nothing else
	pos   string // where it starts in the script
}

// mayBe reports whether w, unknown, may expand to a field equal to e,
// compared as a path from dir too when paths: a glob of * and ? only to
// what its pattern matches (as path.Match, which, unlike a shell, lets *
// match a leading dot: it errs wide), anything else to anything (a
// bracket's syntax differs between the shell and path.Match).
func (w word) mayBe(e, dir string, paths bool) bool {
	if w.glob == "" || strings.ContainsRune(w.glob, '[') {
		return true
	}
	if ok, err := path.Match(w.glob, e); ok || err != nil {
		return true
	}
	if !paths {
		return false
	}
	ok, err := path.Match(inDir(w.glob, dir), inDir(e, dir))
	return ok || err != nil
}

// knownArgs returns the values of words when every one is known.
func knownArgs(words []word) ([]string, bool) {
	out := make([]string, len(words))
	for i, w := range words {
		if !w.known {
			return nil, false
		}
		out[i] = w.text
	}
	return out, true
}

// texts returns each word's value, or its text as written.
func texts(words []word) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w.text
	}
	return out
}

// mayMatch reports whether some expansion of words matches r from some
// dir of dirs: how a deny or escalate rule is tried on a script's
// command, so that no expansion can pass it.
func (r *rule) mayMatch(words []word, dirs []string) bool {
	if r.isEmptySig {
		if r.extra {
			return true
		}
		for _, w := range words {
			if w.known {
				return false
			}
		}
		return true
	}
	for _, sig := range r.sigs {
		for _, dir := range dirs {
			if r.mayMatchSig(words, sig, dir) {
				return true
			}
		}
	}
	return false
}

// mayMatchSig walks words over sig, keeping every position of sig that
// some expansion of the words so far reaches: a known word moves one
// position on when it equals the element there, an unknown one to any
// position at or after its own (it may expand to no field or to many).
func (r *rule) mayMatchSig(words []word, sig []string, dir string) bool {
	n := len(sig)
	reach := make([]bool, n+1)
	next := make([]bool, n+1)
	reach[0] = true
	for _, w := range words {
		clear(next)
		alive := false
		for j := 0; j <= n; j++ {
			if !reach[j] {
				continue
			}
			switch {
			case j == n && r.extra:
				return true // the signature is a prefix of some expansion
			case !w.known:
				next[j] = true // no field (a glob leaves itself, but errs wide)
				for k := j; k < n && w.mayBe(sig[k], dir, r.paths); k++ {
					next[k+1] = true
				}
				alive = true
			case j < n && (w.text == sig[j] || r.paths && samePath(w.text, sig[j], dir)):
				next[j+1] = true
				alive = true
			}
		}
		if !alive {
			return false
		}
		reach, next = next, reach
	}
	return reach[n]
}

// surelyMatches reports whether every expansion of words matches r: how
// an allow rule is tried on a script's command. Allow rules compare
// arguments as written, so dirs do not matter: the words of a signature
// must be known and equal to it, and, unless extra arguments are allowed,
// there must be no other word.
func (r *rule) surelyMatches(words []word) bool {
	return r.matchesBy(len(words), func(i int, a string) bool { return words[i].known && words[i].text == a })
}

// reasonUnknownArgs is the refusal of a script's command whose arguments
// hold an expansion that no allow rule accepts whatever it becomes.
const reasonUnknownArgs = "%q has an argument that is not known before the script runs (%s at %s): no allow rule of tool %q accepts it whatever it becomes: deny"

// decideWords is the gate's decision on a command found in a script:
// command as written, key its lookup name, words its arguments, dirs the
// working directories it may run in. Deny and escalate rules apply when
// some expansion of the words from some dir matches them, allow rules when
// every expansion does. depth counts the shells around it.
func (s *scope) decideWords(tool, command, key string, words []word, dirs []string, depth int) decision.Decision {
	entries := s.lookup(key, nil)
	if len(entries) == 0 {
		return refuseUnlisted(s, tool, command, key)
	}
	for kind := range allowRules { // deny, escalate
		for _, e := range entries {
			for i := range e.rules[kind] {
				if r := &e.rules[kind][i]; r.mayMatch(words, dirs) {
					return r.decision(tool, command)
				}
			}
		}
	}
	for _, e := range entries {
		for i := range e.rules[allowRules] {
			r := &e.rules[allowRules][i]
			if r.shell == nil {
				if r.surelyMatches(words) {
					return r.decision(tool, command)
				}
				continue
			}
			if args, ok := knownArgs(words); ok {
				if d, ok := r.shell.decide(tool, command, args, dirs, depth+1); ok {
					return d
				}
			}
		}
	}
	for _, w := range words {
		if !w.known {
			return deny(reasonUnknownArgs, command, w.text, w.pos, tool)
		}
	}
	return refuseUnmatched(s, tool, command, key, entries)
}
