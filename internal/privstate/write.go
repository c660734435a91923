package privstate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// tmpName returns a fresh temporary name in dir.
func tmpName(dir string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return filepath.Join(dir, ".tmp-"+hex.EncodeToString(b))
}

// writeTemp writes data to a new temporary file in dir (O_EXCL, 0600,
// synced) and returns its name.
func writeTemp(dir string, data []byte) (string, error) {
	tmp := tmpName(dir)
	f, err := CreateExcl(tmp)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// WriteOnce writes data to dir/name through a temporary file linked into
// place: the name appears complete or not at all, and never replaces what
// is there (fs.ErrExist).
func WriteOnce(dir, name string, data []byte) error {
	tmp, err := writeTemp(dir, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, filepath.Join(dir, name)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return err
	}
	return SyncDir(dir)
}
