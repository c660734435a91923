package image

import (
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// MismatchError reports content whose digest (or size) is not the one that
// pins it. Its message names both: "image: layer digest mismatch (layer 2 of
// 3): expected sha256:..., got sha256:...".
type MismatchError struct {
	// What is "manifest", "index", "config", "layer" or "layer diff_id".
	What string
	// Where locates it ("layer 2 of 3"), or is empty.
	Where string
	// Expected is the pinned digest, Actual the digest of the bytes read.
	Expected, Actual v1.Hash
	// ExpectedSize and ActualSize are set instead of the digests when the
	// size is what differs.
	ExpectedSize, ActualSize int64
}

// Error names what mismatched and both digests (or sizes).
func (e *MismatchError) Error() string {
	where := ""
	if e.Where != "" {
		where = " (" + e.Where + ")"
	}
	if e.Expected == (v1.Hash{}) {
		return fmt.Sprintf("image: %s size mismatch%s: expected %d bytes, got %d", e.What, where, e.ExpectedSize, e.ActualSize)
	}
	return fmt.Sprintf("image: %s digest mismatch%s: expected %s, got %s", e.What, where, e.Expected, e.Actual)
}

// Is makes errors.Is(err, ErrMismatch) true for every MismatchError.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// Errors callers branch on. Each is wrapped with context, so test with
// errors.Is.
var (
	// ErrMismatch: content does not match the digest or size that pins it.
	ErrMismatch = errors.New("digest mismatch")
	// ErrNotFound: the pinned digest names nothing in the image path.
	ErrNotFound = errors.New("not found")
	// ErrUnsupported: a well-formed image airlock does not run (another
	// platform, an artifact that is not a container image, encrypted layers).
	ErrUnsupported = errors.New("unsupported image")
	// ErrTooLarge: a size cap was reached (decompression bomb, entry count).
	ErrTooLarge = errors.New("over the size cap")
	// ErrUnsafeEntry: a layer entry that would write outside the root or
	// through a link. The whole unpack is refused.
	ErrUnsafeEntry = errors.New("unsafe layer entry")
	// ErrCacheTampered: a cached rootfs differs from the image (Reverify).
	ErrCacheTampered = errors.New("cached rootfs differs from the image")
	// ErrCacheUnsafe: the cache directory is not private to this user.
	ErrCacheUnsafe = errors.New("cache directory is not private")
)

// Fixed reasons for refused layer entries (EntryError.Reason).
const (
	ReasonAbsolute        = "absolute path"
	ReasonDotDot          = "path has a .. component"
	ReasonEmptyName       = "empty or invalid name"
	ReasonParentSymlink   = "a parent directory is a symlink (no writes through symlinks)"
	ReasonParentNotDir    = "a parent is not a directory"
	ReasonLinkEscapes     = "hardlink target is outside the root"
	ReasonLinkMissing     = "hardlink target was not extracted before the link"
	ReasonLinkToDir       = "hardlink target is a directory"
	ReasonBadWhiteout     = "whiteout names no valid entry"
	ReasonUnmappedID      = "owner has no mapping in the id map"
	ReasonRootNotDir      = "entry would replace the root directory"
	ReasonEmptySymlink    = "symlink has an empty target"
	ReasonOutsideResolved = "path resolves outside the root"
)

// EntryError is a layer entry refused for a fixed Reason. It wraps
// ErrUnsafeEntry.
type EntryError struct {
	Layer  int    // 1-based layer number
	Name   string // the entry's name as it appears in the tar
	Reason string // one of the Reason* constants
}

// Error names the layer, the entry and the reason.
func (e *EntryError) Error() string {
	return fmt.Sprintf("image: layer %d: entry %q refused: %s", e.Layer, e.Name, e.Reason)
}

// Unwrap returns ErrUnsafeEntry.
func (e *EntryError) Unwrap() error { return ErrUnsafeEntry }
