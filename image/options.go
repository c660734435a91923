package image

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// Default caps. An unpack that would pass either fails with ErrTooLarge.
const (
	// DefaultMaxBytes caps the decompressed tar bytes of all layers
	// together, and separately the file bytes written.
	DefaultMaxBytes int64 = 8 << 30
	// DefaultMaxEntries caps the tar entries of all layers together.
	DefaultMaxEntries = 1 << 20
)

// Ownership says whose files the unpacked rootfs holds.
type Ownership int

const (
	// OwnershipUser, the zero value: every file belongs to the user who
	// unpacks, and the image's uid/gid are ignored. This is the rootless
	// mode and the safe default: a user namespace that maps the sandbox's
	// root to this user sees the files as root's. Directories also get the
	// owner's rwx bits, so the user can always delete the cache.
	OwnershipUser Ownership = iota
	// OwnershipImage applies the image's uid/gid as they are (needs root).
	OwnershipImage
	// OwnershipMapped applies the image's uid/gid through UIDMap/GIDMap, as
	// a user namespace with those maps would (needs root). An id with no
	// mapping refuses the unpack.
	OwnershipMapped
)

// IDRange maps Size ids from ContainerID up to HostID up, as one line of
// /proc/PID/uid_map does.
type IDRange struct {
	ContainerID, HostID, Size uint32
}

// Options tune Prepare. The zero value is safe: user ownership,
// default caps, the cache trusted.
type Options struct {
	// Ownership of the unpacked files; see the Ownership constants.
	Ownership Ownership
	// UIDMap and GIDMap are used by OwnershipMapped.
	UIDMap, GIDMap []IDRange
	// MaxBytes caps decompressed and written bytes (0: DefaultMaxBytes).
	MaxBytes int64
	// MaxEntries caps tar entries (0: DefaultMaxEntries).
	MaxEntries int
	// Reverify distrusts a cached rootfs: the image is verified and
	// unpacked afresh and the cached tree is compared with it file by file
	// (type, mode, owner, size, content, link target). A difference fails
	// with ErrCacheTampered and leaves the cache entry in place as evidence.
	Reverify bool
}

func (o Options) maxBytes() int64 {
	if o.MaxBytes > 0 {
		return o.MaxBytes
	}
	return DefaultMaxBytes
}

func (o Options) maxEntries() int {
	if o.MaxEntries > 0 {
		return o.MaxEntries
	}
	return DefaultMaxEntries
}

// check validates the options before anything is written.
func (o Options) check() error {
	switch o.Ownership {
	case OwnershipUser:
		return nil
	case OwnershipImage, OwnershipMapped:
	default:
		return fmt.Errorf("image: unknown ownership mode %d", o.Ownership)
	}
	if os.Geteuid() != 0 {
		return errors.New("image: applying image ownership needs root (use OwnershipUser when rootless)")
	}
	if o.Ownership == OwnershipMapped {
		if len(o.UIDMap) == 0 || len(o.GIDMap) == 0 {
			return errors.New("image: OwnershipMapped needs a UIDMap and a GIDMap")
		}
		for _, r := range append(append([]IDRange{}, o.UIDMap...), o.GIDMap...) {
			if r.Size == 0 || uint64(r.ContainerID)+uint64(r.Size) > 1<<32 || uint64(r.HostID)+uint64(r.Size) > 1<<32 {
				return fmt.Errorf("image: bad id range %+v", r)
			}
		}
	}
	return nil
}

// variant names the cache entry for an ownership mode: one image unpacked
// two ways is two different trees.
func (o Options) variant() string {
	switch o.Ownership {
	case OwnershipImage:
		return "image-ids"
	case OwnershipMapped:
		h := sha256.New()
		fmt.Fprintf(h, "uid %v gid %v", o.UIDMap, o.GIDMap)
		return "idmap-" + hex.EncodeToString(h.Sum(nil))[:16]
	}
	return "user"
}

// mapID maps an image id through ranges; ok is false when no range holds it.
func mapID(ranges []IDRange, id int) (int, bool) {
	if id < 0 || int64(id) >= 1<<32 {
		return 0, false
	}
	for _, r := range ranges {
		if u := uint32(id); u >= r.ContainerID && u-r.ContainerID < r.Size {
			return int(r.HostID + (u - r.ContainerID)), true
		}
	}
	return 0, false
}

// owner returns the uid/gid to apply to an entry, whether to apply any,
// and a refusal reason for an unmapped id.
func (o Options) owner(uid, gid int) (int, int, bool, string) {
	switch o.Ownership {
	case OwnershipImage:
		if uid < 0 || gid < 0 || int64(uid) >= 1<<32-1 || int64(gid) >= 1<<32-1 {
			return 0, 0, false, ReasonUnmappedID
		}
		return uid, gid, true, ""
	case OwnershipMapped:
		u, ok1 := mapID(o.UIDMap, uid)
		g, ok2 := mapID(o.GIDMap, gid)
		if !ok1 || !ok2 {
			return 0, 0, false, ReasonUnmappedID
		}
		return u, g, true, ""
	}
	return 0, 0, false, ""
}

// Stats counts what an unpack did. It is kept in the cache marker, so a
// cached rootfs reports the stats of the unpack that made it.
type Stats struct {
	Layers         int   `json:"layers"`
	Entries        int   `json:"entries"`
	Files          int   `json:"files"`
	Dirs           int   `json:"dirs"`
	Symlinks       int   `json:"symlinks"`
	Hardlinks      int   `json:"hardlinks"`
	Whiteouts      int   `json:"whiteouts"`
	BytesWritten   int64 `json:"bytesWritten"`
	SkippedSpecial int   `json:"skippedSpecial"` // device nodes and FIFOs: the sandbox makes its own /dev
	StrippedSetID  int   `json:"strippedSetID"`  // setuid/setgid bits removed
}
