package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Formats of the image at Ref.Path (Verified.Format).
const (
	FormatOCILayout     = "oci-layout"     // an OCI image layout directory
	FormatOCIArchive    = "oci-archive"    // a tar holding an OCI layout (docker save since 25, podman --format oci-archive)
	FormatDockerArchive = "docker-archive" // legacy `docker save`: manifest.json, config and layer tars, no manifest blob
)

// Verified is an image whose manifest and config were read and checked
// against the pinned digest. Layers are pinned by the manifest (or, in a
// legacy docker-archive, by the config's diff_ids); they are hashed by
// Verify and again by the unpacking as it streams them, so a blob swapped between
// the two is still caught.
type Verified struct {
	// Ref is the reference that was verified.
	Ref Ref
	// Digest is the pinned digest, Ref.Digest: what an audit event names.
	Digest v1.Hash
	// ImageDigest names the content that gets unpacked and keys the cache:
	// the image manifest's digest (the one chosen from an index when Digest
	// names an index), or for a legacy docker-archive the config digest.
	ImageDigest v1.Hash
	// Format is one of the Format* constants.
	Format string
	// Manifest is the image manifest; nil for a legacy docker-archive.
	Manifest *v1.Manifest
	// ConfigDigest is the digest of the image config (docker's image ID).
	ConfigDigest v1.Hash
	// Config is the parsed image config: entrypoint, cmd, env, user,
	// working directory.
	Config *v1.ConfigFile
	// LayersVerified is true once every layer's stored bytes were hashed
	// and matched (by Verify, or by an unpacking that extracted them).
	LayersVerified bool

	layers []layer
}

// Verify checks the image at ref.Path against ref.Digest: the manifest (or
// index, then the manifest it selects for linux/GOARCH), the config, and
// every layer's digest and size (a legacy docker-archive's layers against
// the config's diff_ids). The first mismatch aborts with a *MismatchError
// naming the expected and the actual digest. Unpacking checks the diff_ids of
// the other formats as it decompresses.
func Verify(ctx context.Context, ref Ref) (*Verified, error) {
	v, err := resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := v.verifyLayers(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// resolve reads and checks everything but the layer contents: it is the
// cheap part of Verify, done on every run even when the rootfs is cached.
func resolve(ctx context.Context, ref Ref) (*Verified, error) {
	if _, err := parseDigest(ref.Digest.String()); err != nil {
		return nil, fmt.Errorf("image: %w %q: %w", ErrBadRef, ref.String(), err)
	}
	fi, err := os.Stat(ref.Path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if fi.IsDir() {
		s, err := openLayoutStore(ref.Path)
		if err != nil {
			return nil, err
		}
		return resolveOCI(ref, s, FormatOCILayout)
	}
	a, err := openArchiveStore(ref.Path)
	if err != nil {
		return nil, err
	}
	switch {
	case a.has("blobs/sha256/"+ref.Digest.Hex) && !isConfigBlob(a, ref.Digest):
		return resolveOCI(ref, a, FormatOCIArchive)
	case a.has("manifest.json"):
		return resolveDockerArchive(ref, a)
	case a.has("index.json"):
		return resolveOCI(ref, a, FormatOCIArchive)
	}
	return nil, fmt.Errorf("image: %s holds neither an OCI index.json nor a docker manifest.json: %w", ref.Path, ErrUnsupported)
}

// isConfigBlob reports whether the blob h of an archive is an image config
// rather than a manifest: docker save (25+) stores both as blobs, and a pin
// on the image ID must take the docker-archive path.
func isConfigBlob(a *archiveStore, h v1.Hash) bool {
	b, err := readBlob(a, h, maxConfigBytes, "blob")
	if err != nil {
		return false
	}
	var probe struct {
		RootFS *json.RawMessage `json:"rootfs"`
		Layers *json.RawMessage `json:"layers"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.RootFS != nil && probe.Layers == nil
}

// sha256Of returns the sha256 digest of b.
func sha256Of(b []byte) v1.Hash {
	s := sha256.Sum256(b)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(s[:])}
}

// readPinned reads the blob h and checks that its bytes hash to h.
func readPinned(s blobStore, h v1.Hash, limit int64, what, where string) ([]byte, error) {
	b, err := readBlob(s, h, limit, what)
	if err != nil {
		return nil, err
	}
	if got := sha256Of(b); got != h {
		return nil, &MismatchError{What: what, Where: where, Expected: h, Actual: got}
	}
	return b, nil
}

// verifyLayers hashes every layer's stored bytes. A legacy docker-archive
// layer has no stored digest: its uncompressed tar is hashed against the
// config's diff_id instead, under the default decompression cap.
func (v *Verified) verifyLayers(ctx context.Context) error {
	b := &budget{left: DefaultMaxBytes, cap: DefaultMaxBytes, what: "decompressed layers"}
	for i := range v.layers {
		l := &v.layers[i]
		s, err := openLayer(ctx, l, b)
		if err != nil {
			return err
		}
		if l.digest != (v1.Hash{}) {
			err = s.checkStored()
			s.close()
		} else {
			err = s.finish(nil)
		}
		if err != nil {
			return err
		}
	}
	v.LayersVerified = true
	return nil
}

// checkConfig checks what airlock needs of a config: a layer list that
// matches the manifest's, and a platform this host runs (an empty os or
// architecture is taken as unspecified).
func checkConfig(cfg *v1.ConfigFile, nlayers int) error {
	if cfg.RootFS.Type != "layers" {
		return fmt.Errorf("image: config rootfs.type is %q, want \"layers\": %w", cfg.RootFS.Type, ErrUnsupported)
	}
	if len(cfg.RootFS.DiffIDs) != nlayers {
		return fmt.Errorf("image: config lists %d diff_ids for %d layers", len(cfg.RootFS.DiffIDs), nlayers)
	}
	for i, d := range cfg.RootFS.DiffIDs {
		if d.Algorithm != "sha256" {
			return fmt.Errorf("image: config diff_id %d uses %s, only sha256 is supported: %w", i+1, d.Algorithm, ErrUnsupported)
		}
	}
	if cfg.OS != "" && cfg.OS != "linux" {
		return fmt.Errorf("image: image is for os %q, airlock runs linux images: %w", cfg.OS, ErrUnsupported)
	}
	if cfg.Architecture != "" && cfg.Architecture != hostArch {
		return fmt.Errorf("image: image is for linux/%s, this host is linux/%s: %w", cfg.Architecture, hostArch, ErrUnsupported)
	}
	return nil
}

// parseConfig parses and checks a config blob.
func parseConfig(raw []byte, nlayers int) (*v1.ConfigFile, error) {
	cfg, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("image: parse config: %w", err)
	}
	if err := checkConfig(cfg, nlayers); err != nil {
		return nil, err
	}
	return cfg, nil
}

// layerOpener returns the opener of blob h in s.
func layerOpener(s blobStore, h v1.Hash) func() (io.ReadCloser, int64, error) {
	return func() (io.ReadCloser, int64, error) { return s.blob(h) }
}

// checkLayerDescriptor refuses layers airlock cannot unpack.
func checkLayerDescriptor(d v1.Descriptor, where string) error {
	switch d.MediaType {
	case types.OCILayer, types.OCILayerZStd, types.OCIUncompressedLayer,
		types.DockerLayer, types.DockerUncompressedLayer,
		types.OCIRestrictedLayer, types.OCIUncompressedRestrictedLayer, types.DockerForeignLayer:
	default:
		return fmt.Errorf("image: %s has media type %q, not a layer airlock unpacks: %w", where, d.MediaType, ErrUnsupported)
	}
	if d.Digest.Algorithm != "sha256" {
		return fmt.Errorf("image: %s digest uses %s, only sha256 is supported: %w", where, d.Digest.Algorithm, ErrUnsupported)
	}
	if d.Size < 0 {
		return fmt.Errorf("image: %s has negative size %d", where, d.Size)
	}
	return nil
}
