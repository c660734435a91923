package changes

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
)

// Type is what an Entry is. The zero value, Other, is never read.
type Type uint8

// Entry types.
const (
	// Other is a fifo, socket, device or anything else that is neither a
	// regular file, a directory nor a symbolic link: it is never opened,
	// and the patch cannot carry it.
	Other Type = iota
	// Dir is a directory. Git carries no directories: they exist in the
	// patch only as the paths of the files in them.
	Dir
	// File is a regular file.
	File
	// Symlink is a symbolic link, carried as what it is (its target),
	// never followed.
	Symlink
)

// Entry is one entry of a Tree.
type Entry struct {
	// Path is the entry's path relative to the tree's root,
	// "/"-separated and clean: no "", ".", ".." or empty element.
	Path string
	// Type is what it is.
	Type Type
	// Perm holds its permission bits; of them only the owner's execute
	// bit reaches the patch (git's 100644 and 100755).
	Perm uint32
	// Size is a regular file's length in bytes.
	Size int64
	// Target is a symbolic link's target, as read.
	Target string
	// Skipped, when set, says why the entry is not compared: a fifo,
	// socket or device, a directory or file that could not be read, a
	// directory nested too deep. For a directory it covers everything
	// beneath it. The patch leaves what the other tree has there as it
	// is, and the manifest lists the path with the reason.
	Skipped string
}

// Tree is one side of a comparison.
type Tree interface {
	// List returns every entry of the tree, directories included, in any
	// order: at most lim.Entries of them, their paths and link targets at
	// most lim.NameBytes bytes together. A tree with more fails with an
	// error matching ErrTooLarge, having kept no more than that. prune,
	// when not nil, is asked about each directory before what it holds
	// is listed: when it says true, the directory is listed alone.
	List(lim Limits, prune func(dir string) bool) ([]Entry, error)
	// Open opens for reading the regular file at p, a path that List
	// returned as a File. Diff reads at most the Size that List gave.
	Open(p string) (io.ReadCloser, error)
}

// Empty is the tree with nothing in it: the original of a workspace that
// had none, and what findings are listed against.
var Empty Tree = emptyTree{}

type emptyTree struct{}

func (emptyTree) List(Limits, func(string) bool) ([]Entry, error) { return nil, nil }
func (emptyTree) Open(string) (io.ReadCloser, error)              { return nil, fs.ErrNotExist }

// Limits bound a comparison. A zero field takes its default
// (DefaultLimits); a negative one is an error. They are described in
// docs/changes.md.
type Limits struct {
	// PatchBytes bounds the length of Patch.Diff.
	PatchBytes int64
	// FileBytes bounds one file's size: a file over it on either side of
	// a change is hashed (within ReadBytes) but not diffed, except that a
	// deletion is still carried, as a short binary patch.
	FileBytes int64
	// Files bounds the number of changes that Patch.Diff carries.
	Files int
	// DiffLines bounds the lines of a text file that are diffed line by
	// line: a change with a side of more lines is carried whole, as one
	// hunk that removes every old line and adds every new one. It bounds
	// the memory of the line diff, which grows with the lines.
	DiffLines int
	// Entries bounds the entries of each tree, directories included:
	// past it Diff fails with an error matching ErrTooLarge, since what
	// it cannot list it cannot compare.
	Entries int
	// NameBytes bounds the bytes of the paths and link targets of each
	// tree together, as Entries bounds their number.
	NameBytes int64
	// ReadBytes bounds the bytes read from both trees together to compare
	// and hash them (the diffs of what changed read those files once
	// more). A file that no longer fits is not compared or hashed.
	ReadBytes int64
	// RuleSteps bounds the work of matching paths against each set of
	// exclusion rules (Options.Exclude, the original's ignore files): past
	// it those rules exclude nothing more, and Exclusion.Unused says so.
	RuleSteps int64
}

// Options are what Diff compares within and leaves out by rule.
type Options struct {
	Limits
	// Exclude are patterns in .gitignore syntax, as if in a .gitignore at
	// the root (the policy's changes.exclude): the paths they exclude, in
	// either tree, are not compared, and the patch carries no change of
	// theirs (docs/changes.md, "Left out by rule").
	Exclude []string
}

// DefaultLimits are the limits a zero Limits field takes.
func DefaultLimits() Limits {
	return Limits{
		PatchBytes: 32 << 20,
		FileBytes:  4 << 20,
		Files:      10000,
		DiffLines:  20000,
		Entries:    100000,
		NameBytes:  64 << 20,
		ReadBytes:  1 << 30,
		RuleSteps:  1 << 30,
	}
}

// normalize fills in the defaults and refuses negative limits.
func (l Limits) normalize() (Limits, error) {
	if l.PatchBytes < 0 || l.FileBytes < 0 || l.Files < 0 || l.DiffLines < 0 || l.Entries < 0 || l.NameBytes < 0 || l.ReadBytes < 0 || l.RuleSteps < 0 {
		return l, errors.New("changes: limits: a limit may not be negative (zero means the default)")
	}
	d := DefaultLimits()
	return Limits{
		PatchBytes: orDefault(l.PatchBytes, d.PatchBytes),
		FileBytes:  orDefault(l.FileBytes, d.FileBytes),
		Files:      orDefault(l.Files, d.Files),
		DiffLines:  orDefault(l.DiffLines, d.DiffLines),
		Entries:    orDefault(l.Entries, d.Entries),
		NameBytes:  orDefault(l.NameBytes, d.NameBytes),
		ReadBytes:  orDefault(l.ReadBytes, d.ReadBytes),
		RuleSteps:  orDefault(l.RuleSteps, d.RuleSteps),
	}, nil
}

func orDefault[T int | int64](v, d T) T {
	if v == 0 {
		return d
	}
	return v
}

// ErrTooLarge is matched by the error of Diff (and of a Tree's List)
// when a tree holds more entries than Limits.Entries, or longer names
// than Limits.NameBytes.
var ErrTooLarge = errors.New("too many entries to compare")

// Listing counts what a Tree's List keeps against lim: call Add for each
// entry before keeping it.
type Listing struct {
	lim   Limits
	n     int
	bytes int64
}

// NewListing starts counting a listing against lim.
func NewListing(lim Limits) *Listing { return &Listing{lim: lim} }

// Add counts one more entry, of a path and link target of these lengths,
// and fails with an error matching ErrTooLarge past the limits.
func (l *Listing) Add(pathLen, targetLen int) error {
	l.n++
	l.bytes += int64(pathLen + targetLen)
	switch {
	case l.n > l.lim.Entries:
		return fmt.Errorf("%w: more than %d entries (Limits.Entries)", ErrTooLarge, l.lim.Entries)
	case l.bytes > l.lim.NameBytes:
		return fmt.Errorf("%w: paths and link targets of more than %d bytes (Limits.NameBytes)", ErrTooLarge, l.lim.NameBytes)
	}
	return nil
}

// ErrIncomplete is matched by the error of Patch.Incomplete.
var ErrIncomplete = errors.New("the patch does not carry every change")

// Kind is how a path changed.
type Kind string

// Change kinds.
const (
	// Added: a file or symbolic link that the original did not have.
	Added Kind = "added"
	// Deleted: a file or symbolic link that is gone.
	Deleted Kind = "deleted"
	// Modified: the content or link target changed (and maybe the mode).
	Modified Kind = "modified"
	// Renamed: a file deleted at OldPath and added at Path with the same
	// content (and maybe another mode).
	Renamed Kind = "renamed"
	// ModeChanged: only the executable bit changed.
	ModeChanged Kind = "mode"
	// TypeChanged: a file became a symbolic link or the other way round.
	TypeChanged Kind = "typechange"
	// Skipped: a path that was not compared (see Entry.Skipped).
	Skipped Kind = "skipped"
)

// Mode is a path's mode as git writes it: ModeFile, ModeExec or
// ModeSymlink; 0 where the path is absent.
type Mode uint32

// Git's modes.
const (
	ModeFile    Mode = 0o100644
	ModeExec    Mode = 0o100755
	ModeSymlink Mode = 0o120000
)

// String is the mode in git's octal notation, "100644".
func (m Mode) String() string { return strconv.FormatUint(uint64(m), 8) }

// MarshalText writes the mode as String does.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a mode as String writes it.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(string(b), 8, 32)
	if err != nil {
		return fmt.Errorf("changes: mode %q: %w", b, err)
	}
	*m = Mode(v)
	return nil
}

// FileChange is one changed path of the manifest.
type FileChange struct {
	// Path is the path in the current tree (in the original for a
	// deletion).
	Path string `json:"path"`
	// OldPath is where a renamed file was.
	OldPath string `json:"oldPath,omitempty"`
	// Kind is how it changed.
	Kind Kind `json:"kind"`
	// OldMode and NewMode are git's modes of the two sides, 0 for a side
	// that has no file or link there.
	OldMode Mode `json:"oldMode,omitempty"`
	NewMode Mode `json:"newMode,omitempty"`
	// OldSize and NewSize are the sides' lengths (a link's: its target's).
	OldSize int64 `json:"oldSize"`
	NewSize int64 `json:"newSize"`
	// OldSHA256 and NewSHA256 are the sides' SHA-256 in hex (a link's:
	// of its target), "" for an absent side or one that was not read.
	OldSHA256 string `json:"oldSha256,omitempty"`
	NewSHA256 string `json:"newSha256,omitempty"`
	// Binary is set when either side holds a NUL byte: the patch carries
	// it as a GIT binary patch.
	Binary bool `json:"binary,omitempty"`
	// Omitted says why the patch does not carry this change ("" when it
	// does): applying the patch leaves the original's paths here as they
	// were.
	Omitted string `json:"omitted,omitempty"`
	// Class is the class of the omission ("" when the patch carries the
	// change).
	Class OmitClass `json:"class,omitempty"`
}

// Patch is what Diff found. In JSON it is the manifest alone: the patch
// is written to a file of its own.
type Patch struct {
	// Diff is the patch in git's format, applicable with git apply at the
	// original tree's root. It is untrusted: see docs/changes.md.
	Diff []byte `json:"-"`
	// Files lists every changed path, sorted by Path, each carried by Diff
	// unless Omitted says why not.
	Files []FileChange `json:"files"`
	// Complete is true when Diff carries every change in Files.
	Complete bool `json:"complete"`
	// Omissions counts the changes of Files that Diff leaves out, by
	// class, in the order of OmitClasses: empty when Complete.
	Omissions []Omission `json:"omissions,omitempty"`
	// Excluded counts, by class, what was left out by rule: changes
	// that are not in Files, nor the patch, and do not make it
	// incomplete.
	Excluded []Exclusion `json:"excluded,omitempty"`
}

// Incomplete returns nil when the patch carries every change, else an
// error matching ErrIncomplete that names how many were left out and the
// first few, with why.
func (p Patch) Incomplete() error {
	if p.Complete {
		return nil
	}
	var parts []string
	n := 0
	for _, f := range p.Files {
		if f.Omitted == "" {
			continue
		}
		if n++; n <= 3 {
			parts = append(parts, QuotePath(f.Path)+": "+f.Omitted)
		}
	}
	if n > 3 {
		parts = append(parts, fmt.Sprintf("and %d more", n-3))
	}
	return fmt.Errorf("changes: %w: %d of %d changed paths left out (%s)", ErrIncomplete, n, len(p.Files), strings.Join(parts, "; "))
}
