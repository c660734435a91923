package changes

import (
	"encoding/json"
	"fmt"

	"github.com/airlock-sandbox/airlock/internal/rawtext"
)

// OmitClass is why a class of changes is not in the patch.
type OmitClass string

// The classes of omissions, in the order Patch.Omissions lists them.
const (
	// OmitLimit: past the patch's size or change-count limit
	// (Limits.PatchBytes, Limits.Files), the changes ranked last.
	OmitLimit OmitClass = "limit"
	// OmitLarge: a file over the per-file limit (Limits.FileBytes).
	OmitLarge OmitClass = "large"
	// OmitUnread: a file not read or compared: past the read budget
	// (Limits.ReadBytes), unreadable, or changing while read.
	OmitUnread OmitClass = "unread"
	// OmitSkipped: not compared at all: a fifo, socket or device, a
	// directory that could not be opened or is nested too deep, a path
	// too long.
	OmitSkipped OmitClass = "skipped"
	// OmitGit: a path git apply refuses (inside .git, and the names taken
	// for it).
	OmitGit OmitClass = "git"
	// OmitBlocked: a change that would not apply without one left out.
	OmitBlocked OmitClass = "blocked"
)

// OmitClasses are the classes of omissions, in order.
var OmitClasses = []OmitClass{OmitLimit, OmitLarge, OmitUnread, OmitSkipped, OmitGit, OmitBlocked}

// Says is what the class means, in words for an operator.
func (c OmitClass) Says() string {
	switch c {
	case OmitLimit:
		return "past the patch's size or change-count limit (the changes ranked last: docs/changes.md, \"Limits\")"
	case OmitLarge:
		return "over the per-file limit"
	case OmitUnread:
		return "not read: past the read budget, unreadable, or changing while read"
	case OmitSkipped:
		return "not compared: a fifo, socket or device, a directory that could not be opened or nested too deep, or a path too long"
	case OmitGit:
		return "paths git apply refuses (inside .git, or a name taken for it)"
	case OmitBlocked:
		return "they would not apply without a change that is left out"
	}
	return string(c)
}

// Omission counts the changes of one class that a patch leaves out.
type Omission struct {
	// Class is why.
	Class OmitClass `json:"class"`
	// Count is how many changes.
	Count int `json:"count"`
	// First is the first of them in path order.
	First string `json:"first"`
}

// String is the omission in one line: how many changes, why, and the
// first (quoted as git quotes a path).
func (o Omission) String() string {
	return fmt.Sprintf("%d %s not in the patch (%s): %s; the first: %s", o.Count, plural(o.Count, "change"), o.Class, o.Class.Says(), QuotePath(o.First))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// MarshalJSON writes First byte for byte, as FileChange's paths.
func (o Omission) MarshalJSON() ([]byte, error) {
	type fields Omission
	return json.Marshal(struct {
		fields
		First rawtext.String `json:"first"`
	}{fields(o), rawtext.String(o.First)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *Omission) UnmarshalJSON(b []byte) error {
	type fields Omission
	return json.Unmarshal(b, &struct {
		*fields
		First *rawtext.String `json:"first"`
	}{(*fields)(o), (*rawtext.String)(&o.First)})
}

// ExcludeClass is which rules left changes out.
type ExcludeClass string

// The classes of exclusions.
const (
	// ExcludePolicy: Options.Exclude, the policy's changes.exclude.
	ExcludePolicy ExcludeClass = "policy"
	// ExcludeGitignore: the original's .gitignore files and
	// .git/info/exclude, for paths the original did not have.
	ExcludeGitignore ExcludeClass = "gitignore"
)

// maxFirst is how many of its paths an Exclusion names.
const maxFirst = 3

// Exclusion counts what one class of rules left out of a comparison.
type Exclusion struct {
	// Class is which rules.
	Class ExcludeClass `json:"class"`
	// Paths counts the files, links and other entries left out, not
	// compared: for the policy's patterns, those of either tree, changed
	// or not; for the ignore files, those the original did not have.
	Paths int `json:"paths"`
	// Dirs counts the directories left out whole: not read, so what
	// changed in them is not known.
	Dirs int `json:"dirs"`
	// First names the first few of both, in path order.
	First []string `json:"first,omitempty"`
	// Unused says why some of the rules were not used, "" when all were:
	// a path they would have excluded is compared (and carried) instead.
	Unused string `json:"unused,omitempty"`
}

// String is the exclusion in one line.
func (e Exclusion) String() string {
	dirs := "directories"
	if e.Dirs == 1 {
		dirs = "directory"
	}
	s := fmt.Sprintf("excluded by %s: %d %s and %d %s not compared", e.Class, e.Paths, plural(e.Paths, "path"), e.Dirs, dirs)
	for i, p := range e.First {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		s += sep + QuotePath(p)
	}
	if len(e.First) > 0 {
		if e.Paths+e.Dirs > len(e.First) {
			s += ", ..."
		}
		s += ")"
	}
	if e.Unused != "" {
		s += "; " + e.Unused
	}
	return s
}

// MarshalJSON writes First byte for byte, as FileChange's paths.
func (e Exclusion) MarshalJSON() ([]byte, error) {
	type fields Exclusion
	return json.Marshal(struct {
		fields
		First rawtext.Strings `json:"first,omitempty"`
	}{fields(e), e.First})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Exclusion) UnmarshalJSON(b []byte) error {
	type fields Exclusion
	return json.Unmarshal(b, &struct {
		*fields
		First *rawtext.Strings `json:"first,omitempty"`
	}{(*fields)(e), (*rawtext.Strings)(&e.First)})
}
