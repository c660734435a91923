// Package gitignore decides which paths git's ignore rules exclude, as
// git does: the patterns of .gitignore files (each applying beneath its
// own directory, the deepest winning), of $GIT_DIR/info/exclude, and
// lists given as such (the policy's changes.exclude), with git's syntax
// — comments, negation with "!", a trailing "/" for directories only, a
// leading or inner "/" anchoring the pattern to its file's directory,
// "*", "?", bracket expressions with ranges, "!" or "^" negation and
// POSIX classes, "**" between slashes, backslash escapes, trailing
// spaces trimmed unless escaped — and git's rule that nothing beneath
// an excluded directory can be included again. It is git's dir.c and
// wildmatch.c read as a specification and checked against the
// installed git (TestAgainstGit, FuzzAgainstGit); matching is always
// case-sensitive (core.ignoreCase off, git's default on Linux).
//
// Patterns are input: the ignore files of a workspace come from whoever
// wrote the workspace, the paths from whatever ran in the sandbox. A
// pattern is matched in time proportional to its length times the
// path's (no backtracking), and a Matcher stops, with ErrBudget, after
// the number of steps it was given; a pattern that git can never match
// (an unclosed bracket, an unknown class, a trailing backslash) matches
// nothing here either, and Compile refuses it.
package gitignore
