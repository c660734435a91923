package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/internal/privstate"
)

// The last checkpoint a Signer signed for a log is kept in one file of
// the key's directory with two slots, written in turn in place (pwrite and
// fdatasync: one sync a checkpoint, no new file or directory entry). A
// slot holds a magic line, a counter, the state's length, the state and
// its SHA-256; the valid slot with the higher counter is the kept one, so
// a write torn by a crash leaves the other. Written by hand: no library
// keeps a small record durable in one sync.

const (
	keptMagic = "airlock-kept v1\n"
	keptSlot  = 4096
	keptHead  = len(keptMagic) + 8 + 4
)

// readKept returns the kept state and its counter, or fs.ErrNotExist.
func readKept(path string) ([]byte, uint64, error) {
	b, err := privstate.ReadPrivate(path, 2*keptSlot)
	if err != nil {
		return nil, 0, err
	}
	var best []byte
	var bestN uint64
	for off := 0; off+keptSlot <= len(b); off += keptSlot {
		if state, n, ok := parseSlot(b[off : off+keptSlot]); ok && (best == nil || n > bestN) {
			best, bestN = state, n
		}
	}
	if best == nil {
		return nil, 0, fmt.Errorf("%s holds no intact checkpoint", path)
	}
	return best, bestN, nil
}

func parseSlot(s []byte) ([]byte, uint64, bool) {
	if !bytes.HasPrefix(s, []byte(keptMagic)) {
		return nil, 0, false
	}
	n := binary.BigEndian.Uint64(s[len(keptMagic):])
	size := int(binary.BigEndian.Uint32(s[len(keptMagic)+8:]))
	if size > keptSlot-keptHead-sha256.Size {
		return nil, 0, false
	}
	state := s[keptHead : keptHead+size]
	sum := sha256.Sum256(s[:keptHead+size])
	if !bytes.Equal(sum[:], s[keptHead+size:keptHead+size+sha256.Size]) {
		return nil, 0, false
	}
	return bytes.Clone(state), n, true
}

// writeKept keeps state with counter n, in the slot the current one is
// not in, and syncs it. The file is created (0600) on first use.
func writeKept(dir, name string, state []byte, n uint64) error {
	if len(state) > keptSlot-keptHead-sha256.Size {
		return errors.New("the checkpoint is too large to keep")
	}
	slot := make([]byte, keptSlot)
	copy(slot, keptMagic)
	binary.BigEndian.PutUint64(slot[len(keptMagic):], n)
	binary.BigEndian.PutUint32(slot[len(keptMagic)+8:], uint32(len(state)))
	copy(slot[keptHead:], state)
	sum := sha256.Sum256(slot[:keptHead+len(state)])
	copy(slot[keptHead+len(state):], sum[:])
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|noFollow, 0)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		f, err = privstate.CreateExcl(path)
		if err == nil {
			f.Close()
			f, err = os.OpenFile(path, os.O_RDWR|noFollow, 0)
			created = true
		}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(slot, int64(n%2)*keptSlot); err != nil {
		return err
	}
	if err := syncData(f); err != nil {
		return err
	}
	if created {
		return syncDir(dir)
	}
	return nil
}
