package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
)

// archiveStore is a tar archive of an image: `docker save` output (with or
// without the OCI index docker 25+ adds) or an OCI archive. It is indexed
// once (headers only; data is skipped by seeking) and members are then read
// in place through io.SectionReader, so a multi-gigabyte archive is never
// copied or scanned twice.
type archiveStore struct {
	path    string
	fi      os.FileInfo
	members map[string]member
}

// member is one tar entry of an archive.
type member struct {
	typ      byte
	off      int64
	size     int64
	linkname string
}

const (
	maxArchiveMembers = 100_000
	maxMemberLinks    = 16
)

// openArchiveStore indexes the tar archive at p.
func openArchiveStore(p string) (*archiveStore, error) {
	f, fi, err := hostfile.Open(p) // a FIFO or a device is refused, not waited on
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	var magic [4]byte
	if n, _ := io.ReadFull(f, magic[:]); n == 4 && (bytes.Equal(magic[:2], []byte{0x1f, 0x8b}) || bytes.Equal(magic[:], zstdMagic)) {
		return nil, fmt.Errorf("image: %s is a compressed archive: decompress it first (airlock reads blobs in place): %w", p, ErrUnsupported)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	s := &archiveStore{path: p, fi: fi, members: map[string]member{}}
	tr := tar.NewReader(f) // f is an io.Seeker: Next skips data by seeking
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("image: %s is not a tar archive: %w", p, err)
		}
		if len(s.members) >= maxArchiveMembers {
			return nil, fmt.Errorf("image: %s has more than %d members: %w", p, maxArchiveMembers, ErrTooLarge)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		m := member{typ: hdr.Typeflag, size: hdr.Size, linkname: hdr.Linkname}
		if hdr.Typeflag == tar.TypeReg {
			if isSparse(hdr) {
				continue // blobs are never sparse; a sparse member is unreadable in place
			}
			// tar.Reader reads exactly the header blocks, so the file
			// offset now is where this member's data starts.
			if m.off, err = f.Seek(0, io.SeekCurrent); err != nil {
				return nil, fmt.Errorf("image: %w", err)
			}
		}
		s.members[name] = m
	}
	return s, nil
}

func isSparse(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// has reports whether the archive holds a member of that name.
func (s *archiveStore) has(name string) bool {
	_, ok := s.members[name]
	return ok
}

// open opens a member, following symlinks and hardlinks between members
// (legacy `docker save` links shared layers), never outside the archive.
func (s *archiveStore) open(name string) (io.ReadCloser, int64, error) {
	name = path.Clean(name)
	for range maxMemberLinks {
		m, ok := s.members[name]
		if !ok {
			return nil, 0, fmt.Errorf("member %q: %w", name, fs.ErrNotExist)
		}
		switch m.typ {
		case tar.TypeReg:
			return s.section(name, m)
		case tar.TypeSymlink:
			if path.IsAbs(m.linkname) {
				return nil, 0, fmt.Errorf("member %q: absolute symlink in archive", name)
			}
			name = path.Join(path.Dir(name), m.linkname)
		case tar.TypeLink:
			name = path.Clean(m.linkname)
		default:
			return nil, 0, fmt.Errorf("member %q: not a regular file", name)
		}
		if name == ".." || strings.HasPrefix(name, "../") {
			return nil, 0, fmt.Errorf("member link points outside the archive")
		}
	}
	return nil, 0, errors.New("member: too many links")
}

// section reopens the archive (checking it is still the file indexed) and
// returns a reader over one member's data.
func (s *archiveStore) section(name string, m member) (io.ReadCloser, int64, error) {
	f, fi, err := hostfile.Open(s.path)
	if err != nil {
		return nil, 0, err
	}
	if !os.SameFile(fi, s.fi) || fi.Size() != s.fi.Size() {
		f.Close()
		return nil, 0, fmt.Errorf("archive %s changed since it was indexed", s.path)
	}
	return &sectionFile{SectionReader: io.NewSectionReader(f, m.off, m.size), f: f}, m.size, nil
}

type sectionFile struct {
	*io.SectionReader
	f *os.File
}

func (s *sectionFile) Close() error { return s.f.Close() }

func (s *archiveStore) blob(h v1.Hash) (io.ReadCloser, int64, error) {
	return s.open("blobs/" + h.Algorithm + "/" + h.Hex)
}

func (s *archiveStore) rawIndex() ([]byte, error) {
	rc, _, err := s.open("index.json")
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readLimited(rc, maxIndexBytes, "index.json")
}

func (s *archiveStore) String() string { return "archive " + s.path }
