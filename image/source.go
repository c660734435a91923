package image

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
)

// blobStore is where an image's content-addressed blobs live: an OCI image
// layout directory, or the blobs/ tree inside a tar archive. Nothing a store
// returns is trusted: every blob is hashed by the caller.
type blobStore interface {
	// blob opens the blob stored under h and returns its stored size.
	// A missing blob is an error wrapping fs.ErrNotExist.
	blob(h v1.Hash) (io.ReadCloser, int64, error)
	// rawIndex returns the bytes of the top-level index.json (untrusted:
	// used only to name what the store holds in error messages).
	rawIndex() ([]byte, error)
	// String names the store for error messages.
	String() string
}

// Size limits on the JSON documents airlock reads into memory. The OCI
// image spec suggests registries accept manifests up to 4 MiB; configs with
// long histories are larger, so they get more.
const (
	maxManifestBytes = 4 << 20
	maxConfigBytes   = 16 << 20
	maxIndexBytes    = 4 << 20
)

// layoutStore is an OCI image layout directory, read through
// go-containerregistry's layout package, whose Blob refuses symlinked and
// non-regular blob files.
type layoutStore struct{ p layout.Path }

func openLayoutStore(dir string) (*layoutStore, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("image: %s is not an OCI image layout (no index.json): %w", dir, err)
	}
	if _, err := os.Lstat(string(p) + "/oci-layout"); err != nil {
		return nil, fmt.Errorf("image: %s is not an OCI image layout (no oci-layout file): %w", dir, err)
	}
	return &layoutStore{p: p}, nil
}

func (s *layoutStore) blob(h v1.Hash) (io.ReadCloser, int64, error) {
	rc, err := s.p.Blob(h)
	if err != nil {
		return nil, 0, err
	}
	f, ok := rc.(*os.File)
	if !ok {
		rc.Close()
		return nil, 0, errors.New("layout blob is not a file")
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

func (s *layoutStore) rawIndex() ([]byte, error) {
	f, _, err := hostfile.Open(string(s.p) + "/index.json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, maxIndexBytes, "index.json")
}

func (s *layoutStore) String() string { return "OCI layout " + string(s.p) }

// readLimited reads all of r, refusing more than limit bytes.
func readLimited(r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("read %s: larger than %d bytes: %w", what, limit, ErrTooLarge)
	}
	return b, nil
}

// readBlob reads a whole (small) blob and returns its bytes.
func readBlob(s blobStore, h v1.Hash, limit int64, what string) ([]byte, error) {
	rc, size, err := s.blob(h)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if size > limit {
		return nil, fmt.Errorf("image: %s %s is %d bytes, over the %d-byte limit: %w", what, h, size, limit, ErrTooLarge)
	}
	b, err := readLimited(rc, limit, what)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return b, nil
}

// isNotExist reports a missing blob or member.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
