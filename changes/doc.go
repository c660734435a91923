// Package changes compares two trees — a workspace as it was copied into a
// sandbox and the same workspace now — and hands back what changed: a
// patch in git's format, applicable with git apply on the original tree,
// and a manifest of the changed paths.
//
// The patch is an untrusted artifact: it was written by whatever ran in
// the sandbox. airlock never applies it; a person or a reviewing tool
// reads it and decides. Every limit (Limits) bounds what is read and
// what is kept, and a change the patch cannot carry is listed in the
// manifest with why and its class (FileChange.Omitted, Patch.Omissions),
// never dropped silently; when a limit bites, the source is given room
// first. What the operator's patterns (Options.Exclude) and the
// original's own .gitignore files exclude is left out and counted
// (Patch.Excluded): the ignore files are read from the original, which
// nothing in the sandbox can change, and exclude only what the original
// did not have. The format, the limits, the rules and what is skipped
// are described in docs/changes.md.
//
// The comparison is pure Go and reads each tree through a Tree; the
// sandbox supplies its own for the copy-in and for /workspace
// (sandbox.Session.Changes), and FSTree reads an fs.FS.
package changes
