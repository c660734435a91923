package image

import (
	"errors"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Ref names a pinned image: a local image PATH (an OCI image layout
// directory, or a tar archive: `docker save` output or an OCI archive) and the
// sha256 digest it must have.
type Ref struct {
	// Path is the image layout directory or archive file, as given.
	Path string
	// Digest is the pinned digest: of an image manifest, of an image index,
	// or (for a docker-archive without an OCI index) of the image config,
	// which is the image ID docker prints.
	Digest v1.Hash
}

// String returns the reference as PATH@sha256:HEX.
func (r Ref) String() string { return r.Path + "@" + r.Digest.String() }

// ErrBadRef is wrapped by every error ParseRef returns.
var ErrBadRef = errors.New("bad image reference")

// ParseRef parses PATH@sha256:HEX. It splits at the last "@", so a PATH may
// itself hold an "@". The digest must be sha256 with exactly 64 lower-case
// hex digits: a tag, a missing digest or any other algorithm is refused,
// since only a digest pins content.
func ParseRef(s string) (Ref, error) {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return Ref{}, fmt.Errorf("image: %w %q: missing digest (want PATH@sha256:<64 hex digits>)", ErrBadRef, s)
	}
	p, d := s[:at], s[at+1:]
	if p == "" {
		return Ref{}, fmt.Errorf("image: %w %q: empty path (want PATH@sha256:<64 hex digits>)", ErrBadRef, s)
	}
	h, err := parseDigest(d)
	if err != nil {
		return Ref{}, fmt.Errorf("image: %w %q: %w", ErrBadRef, s, err)
	}
	return Ref{Path: p, Digest: h}, nil
}

// parseDigest parses sha256:HEX strictly (OCI image spec, "Digests": the
// sha256 encoded part is [a-f0-9]{64}).
func parseDigest(d string) (v1.Hash, error) {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok {
		return v1.Hash{}, errors.New("digest has no algorithm (want sha256:<64 hex digits>)")
	}
	if alg != "sha256" {
		return v1.Hash{}, fmt.Errorf("unsupported digest algorithm %q (only sha256)", alg)
	}
	if len(hex) != 64 {
		return v1.Hash{}, fmt.Errorf("sha256 digest has %d hex digits, want 64", len(hex))
	}
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return v1.Hash{}, errors.New("sha256 digest must be lower-case hex digits")
		}
	}
	return v1.Hash{Algorithm: alg, Hex: hex}, nil
}
