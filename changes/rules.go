package changes

import (
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/airlock-sandbox/airlock/internal/gitignore"
)

// maxRuleBytes bounds the original's ignore files, together: past it
// none of their rules is used (git reads up to 100 MiB of each).
const maxRuleBytes = 4 << 20

// rules decides what Diff leaves out by rule: the operator's patterns
// (Options.Exclude) for every path of either tree, and the original's
// ignore files for the paths the original did not have. The original is
// the workspace as it was copied in, which whatever ran in the sandbox
// could not change: an ignore file it added or changed excludes nothing,
// and it is itself a change the patch carries (docs/changes.md).
type rules struct {
	policy, ws *gitignore.Matcher // ws nil until loaded, or when unused
	pruned     map[string]ExcludeClass
	ex         map[ExcludeClass]*Exclusion
}

// newRules compiles the operator's patterns.
func newRules(exclude []string, lim Limits) (*rules, error) {
	r := &rules{policy: gitignore.NewMatcher(lim.RuleSteps), pruned: map[string]ExcludeClass{},
		ex: map[ExcludeClass]*Exclusion{ExcludePolicy: {Class: ExcludePolicy}, ExcludeGitignore: {Class: ExcludeGitignore}}}
	ps := make([]gitignore.Pattern, 0, len(exclude))
	for i, e := range exclude {
		p, err := gitignore.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("changes: exclude[%d] %q: %w", i, e, err)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		r.policy = nil // nothing to match every path against
	} else {
		r.policy.Add("", ps)
	}
	return r, nil
}

// loadWorkspace reads the ignore files of the original t: every regular
// file named .gitignore, each for its directory, and .git/info/exclude
// (links are not followed: git reads no .gitignore through one either).
func (r *rules) loadWorkspace(t *tree, lim Limits) {
	var files []string
	for p, e := range t.m {
		if e.Type == File && e.Skipped == "" && (path.Base(p) == ".gitignore" || p == ".git/info/exclude") {
			files = append(files, p)
		}
	}
	slices.Sort(files)
	ws := gitignore.NewMatcher(lim.RuleSteps)
	var size int64
	for _, p := range files {
		e := t.m[p]
		if size += e.Size; size > maxRuleBytes {
			r.unused(ExcludeGitignore, fmt.Sprintf("none of the workspace's ignore rules is used: its ignore files are over %d bytes together", maxRuleBytes))
			return
		}
		content := make([]byte, 0, e.Size)
		if err := readExactly(t, e, func(b []byte) { content = append(content, b...) }); err != nil {
			r.unused(ExcludeGitignore, fmt.Sprintf("none of the workspace's ignore rules is used: %s could not be read: %s", QuotePath(p), errText(err)))
			return
		}
		if p == ".git/info/exclude" {
			ws.AddLast(gitignore.ParseFile(content))
		} else if dir := path.Dir(p); dir == "." {
			ws.Add("", gitignore.ParseFile(content))
		} else {
			ws.Add(dir, gitignore.ParseFile(content))
		}
	}
	if !ws.Empty() {
		r.ws = ws
	}
}

// unused says why some rules of class c were not used.
func (r *rules) unused(c ExcludeClass, why string) {
	if r.ex[c].Unused == "" {
		r.ex[c].Unused = why
	}
}

// match asks m about p, and takes a spent budget for "not excluded".
func (r *rules) match(c ExcludeClass, m *gitignore.Matcher, p string, isDir bool) bool {
	if m == nil {
		return false
	}
	ex, err := m.Excluded(p, isDir)
	if errors.Is(err, gitignore.ErrBudget) {
		r.unused(c, "matching took more than its steps (Limits.RuleSteps): the paths matched after that are compared")
	}
	return ex
}

// prune says whether a directory is listed alone: one the operator's
// patterns exclude or, when orig says the original does not have it,
// one the original's ignore files exclude. It keeps which.
func (r *rules) prune(orig func(string) bool) func(string) bool {
	return func(dir string) bool {
		c, ok := r.excludes(dir, true, orig(dir))
		if ok {
			r.pruned[dir] = c
		}
		return ok
	}
}

// excludes says whether the rules leave out p (a directory when isDir
// is set), and which: the operator's patterns whatever the path, the
// original's ignore files only for a path the original did not have
// (inOrig false), and never for a .gitignore file itself.
func (r *rules) excludes(p string, isDir, inOrig bool) (ExcludeClass, bool) {
	switch {
	case r.match(ExcludePolicy, r.policy, p, isDir):
		return ExcludePolicy, true
	case !inOrig && (isDir || path.Base(p) != ".gitignore") && r.match(ExcludeGitignore, r.ws, p, isDir):
		return ExcludeGitignore, true
	}
	return "", false
}

// ignored reports whether the original's ignore files exclude p, a path
// the original has: a change there ranks last (rank).
func (r *rules) ignored(p string) bool {
	return r.match(ExcludeGitignore, r.ws, p, false)
}

// underPruned reports whether a directory above p was listed alone.
func (r *rules) underPruned(p string) bool {
	for q := path.Dir(p); q != "."; q = path.Dir(q) {
		if _, ok := r.pruned[q]; ok {
			return true
		}
	}
	return false
}

// count counts a path left out (a directory left out whole when dir is
// set) against c.
func (r *rules) count(c ExcludeClass, p string, dir bool) {
	e := r.ex[c]
	if dir {
		e.Dirs++
	} else {
		e.Paths++
	}
	i, _ := slices.BinarySearch(e.First, p)
	if i < maxFirst {
		e.First = slices.Insert(e.First, i, p)
		e.First = e.First[:min(len(e.First), maxFirst)]
	}
}

// exclusions are the classes that left something out or did not use
// all their rules, directories pruned included.
func (r *rules) exclusions() []Exclusion {
	for p, c := range r.pruned {
		r.count(c, p, true)
	}
	var out []Exclusion
	for _, c := range []ExcludeClass{ExcludePolicy, ExcludeGitignore} {
		if e := r.ex[c]; e.Paths+e.Dirs > 0 || e.Unused != "" {
			out = append(out, *e)
		}
	}
	return out
}
