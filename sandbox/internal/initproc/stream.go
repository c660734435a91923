package initproc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The workspace stream: after the config on the setup pipe, the parent
// sends the workspace as a sequence of entries, each a big-endian uint32
// length, that many bytes of JSON Entry, then Entry.Size bytes of a
// regular file's content; the stream ends at the end of the pipe.
//
// Not tar: archive/tar imports os/user, which would move this package's
// initialiser, and so the init's start, behind most of the binary's (see
// doc.go). The format carries only what the copy keeps (directories,
// regular files, symbolic links, permission bits), and the init checks
// every name anyway (extractWorkspace).

// Entry types.
const (
	EntryDir     = "dir"
	EntryFile    = "file"
	EntrySymlink = "symlink"
)

// maxEntryHeader bounds one entry's JSON (a name and a link target of
// PATH_MAX each fit many times over).
const maxEntryHeader = 64 << 10

// Entry is one workspace entry of the stream.
type Entry struct {
	Type string `json:"type"`
	// Name is the path relative to the workspace, "/"-separated.
	Name string `json:"name"`
	// Link is a symbolic link's target, as read (never followed).
	Link string `json:"link,omitempty"`
	// Mode holds the permission bits (0o777 at most).
	Mode uint32 `json:"mode,omitempty"`
	// Size is a regular file's length: the bytes that follow.
	Size int64 `json:"size,omitempty"`
}

// WriteEntry writes e and, for a regular file, exactly e.Size bytes of
// content to w.
func WriteEntry(w io.Writer, e Entry, content io.Reader) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(append(n[:], b...)); err != nil {
		return err
	}
	if e.Type != EntryFile {
		return nil
	}
	copied, err := io.CopyN(w, content, e.Size)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if copied != e.Size {
		return errChanged
	}
	return nil
}

// errChanged is a file that shrank while it was being sent.
var errChanged = errors.New("changed while being copied")

// ReadEntry reads the next entry's header; io.EOF at the stream's clean
// end.
func ReadEntry(r io.Reader) (Entry, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Entry{}, errors.New("truncated entry length")
		}
		return Entry{}, err // io.EOF: the end
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxEntryHeader {
		return Entry{}, fmt.Errorf("entry header of %d bytes exceeds %d", size, maxEntryHeader)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return Entry{}, fmt.Errorf("truncated entry header: %w", err)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("decode entry header: %w", err)
	}
	return e, nil
}
