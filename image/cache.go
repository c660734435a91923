package image

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Cache layout, under the cache directory:
//
//	sha256/<image digest hex>/<variant>/rootfs/             the unpacked tree
//	sha256/<image digest hex>/<variant>/airlock-image.json  the marker
//	tmp/unpack-*/                                           unpacks in progress
//
// An unpack builds tmp/unpack-XXXX/{rootfs,marker} and renames it into
// place only when every layer was verified and extracted, so a present
// marker means a complete tree. The variant is the ownership mode.
const (
	markerName     = "airlock-image.json"
	markerVersion  = 1
	maxMarkerBytes = 64 << 10
	tmpDirName     = "tmp"
	staleTmpAge    = 24 * time.Hour
)

// DefaultCacheDir returns $XDG_CACHE_HOME/airlock/images, or
// ~/.cache/airlock/images.
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("image: no cache directory: %w", err)
	}
	return filepath.Join(d, "airlock", "images"), nil
}

// marker records what a cache entry holds.
type marker struct {
	Version     int     `json:"version"`
	Digest      v1.Hash `json:"digest"`
	ImageDigest v1.Hash `json:"imageDigest"`
	Variant     string  `json:"variant"`
	Stats       Stats   `json:"stats"`
}

// Prepared is an image verified and unpacked.
type Prepared struct {
	*Verified
	// Rootfs is the unpacked tree, to be mounted read-only as the root.
	Rootfs string
	// Cached is true when Rootfs was already in the cache: the manifest
	// and config were verified by this call, the layers when the entry was
	// made (or again now, with Options.Reverify).
	Cached bool
	// Stats of the unpack that made Rootfs.
	Stats Stats
}

// Prepare verifies ref and returns its unpacked rootfs from cacheDir ("" for
// DefaultCacheDir), unpacking it on first use. Layers are hashed as they are
// unpacked, in one pass; nothing reaches the cache unless all of them match.
// A cached entry is reused after re-checking the manifest and config and
// the entry's marker.
func Prepare(ctx context.Context, ref Ref, cacheDir string, opts Options) (*Prepared, error) {
	v, err := resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return unpack(ctx, v, cacheDir, opts)
}

// unpack prepares the rootfs of a verified image in cacheDir ("" for
// DefaultCacheDir), unpacking it there if it is not cached. The layers are
// hashed again as they are read, so a blob changed since Verify is caught.
func unpack(ctx context.Context, v *Verified, cacheDir string, opts Options) (*Prepared, error) {
	if v == nil || v.Config == nil {
		return nil, errors.New("image: unpack of an image that was not verified")
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	if cacheDir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		cacheDir = d
	}
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if err := makePrivateDir(cacheDir); err != nil {
		return nil, err
	}
	entry := filepath.Join(cacheDir, "sha256", v.ImageDigest.Hex, opts.variant())
	cached, cerr := readEntry(entry, v, opts.variant())
	if errors.Is(cerr, ErrCacheUnsafe) {
		return nil, cerr
	}
	if cerr == nil && !opts.Reverify {
		return &Prepared{Verified: v, Rootfs: filepath.Join(entry, "rootfs"), Cached: true, Stats: cached.Stats}, nil
	}
	tmpRoot := filepath.Join(cacheDir, tmpDirName)
	if err := makePrivateDir(tmpRoot); err != nil {
		return nil, err
	}
	removeStale(tmpRoot)
	tmp, err := os.MkdirTemp(tmpRoot, "unpack-")
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(tmp)
		}
	}()
	stats, err := extractAll(ctx, v, filepath.Join(tmp, "rootfs"), opts)
	if err != nil {
		return nil, err
	}
	m := marker{Version: markerVersion, Digest: v.Digest, ImageDigest: v.ImageDigest, Variant: opts.variant(), Stats: stats}
	if err := writeMarker(tmp, m); err != nil {
		return nil, err
	}
	if cerr == nil { // Reverify of an existing entry
		if err := compareTrees(filepath.Join(entry, "rootfs"), filepath.Join(tmp, "rootfs")); err != nil {
			return nil, fmt.Errorf("image: cache entry %s: %w: %w (remove it to unpack afresh)", entry, ErrCacheTampered, err)
		}
		return &Prepared{Verified: v, Rootfs: filepath.Join(entry, "rootfs"), Cached: true, Stats: cached.Stats}, nil
	}
	if err := syncFS(tmp); err != nil {
		return nil, err
	}
	if err := makePrivateDir(filepath.Dir(entry)); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, entry); err != nil {
		// Another process may have finished the same entry first.
		if _, rerr := readEntry(entry, v, opts.variant()); rerr == nil {
			return &Prepared{Verified: v, Rootfs: filepath.Join(entry, "rootfs"), Cached: true, Stats: stats}, nil
		}
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return nil, fmt.Errorf("image: cache entry %s exists but is not a complete unpack (remove it): %w", entry, err)
		}
		return nil, fmt.Errorf("image: %w", err)
	}
	keep = true
	return &Prepared{Verified: v, Rootfs: filepath.Join(entry, "rootfs"), Stats: stats}, nil
}

// extractAll streams every layer, in order, into rootfs.
func extractAll(ctx context.Context, v *Verified, rootfs string, opts Options) (Stats, error) {
	var st Stats
	x, err := newExtractor(rootfs, opts, &st)
	if err != nil {
		return st, err
	}
	defer x.close()
	b := &budget{left: opts.maxBytes(), cap: opts.maxBytes(), what: "decompressed layers"}
	for i := range v.layers {
		s, err := openLayer(ctx, &v.layers[i], b)
		if err != nil {
			return st, err
		}
		err = x.layer(ctx, i+1, tar.NewReader(s.tar))
		if err := s.finish(err); err != nil {
			return st, err
		}
		st.Layers++
	}
	if err := x.finish(); err != nil {
		return st, err
	}
	v.LayersVerified = true
	return st, nil
}

// readEntry checks a cache entry cheaply: a private directory whose marker
// names this image and variant, beside a rootfs directory.
func readEntry(entry string, v *Verified, variant string) (*marker, error) {
	if err := checkPrivate(entry); err != nil {
		return nil, err
	}
	mp := filepath.Join(entry, markerName)
	if fi, err := os.Lstat(mp); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() || fi.Size() > maxMarkerBytes {
		return nil, fmt.Errorf("image: cache marker %s is not a small regular file: %w", mp, ErrCacheUnsafe)
	}
	b, err := os.ReadFile(mp)
	if err != nil {
		return nil, err
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("image: cache marker %s: %w", entry, err)
	}
	if m.Version != markerVersion || m.ImageDigest != v.ImageDigest || m.Variant != variant {
		return nil, fmt.Errorf("image: cache marker %s names another image", entry)
	}
	fi, err := os.Lstat(filepath.Join(entry, "rootfs"))
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("image: cache entry %s: rootfs is not a directory", entry)
	}
	return &m, nil
}

func writeMarker(dir string, m marker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, markerName), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return nil
}

// removeStale deletes unpack directories left by a process that died more
// than staleTmpAge ago. Best effort: a failure here changes nothing else.
func removeStale(tmpRoot string) {
	ents, err := os.ReadDir(tmpRoot)
	if err != nil {
		return
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleTmpAge {
			os.RemoveAll(filepath.Join(tmpRoot, e.Name()))
		}
	}
}

// makePrivateDir creates dir (and parents) mode 0700 if missing, then
// checks it is private (see checkPrivate).
func makePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return checkPrivate(dir)
}
