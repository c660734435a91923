package image

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// hostArch is the architecture an image must be built for (or leave empty).
var hostArch = runtime.GOARCH

// maxLayers bounds the layer count of one image (overlayfs-based engines
// stop near 128; this only keeps a hostile manifest from asking for more
// work than any real image).
const maxLayers = 1000

// resolveOCI resolves a pinned digest in an OCI layout (directory or tar).
// The pinned blob is read straight from blobs/sha256/: index.json is not
// content-addressed, so it is consulted only to word the error when the pin
// names nothing. A pin may name an image manifest, or an image index from
// which the one manifest for linux/GOARCH is taken: the index's digest
// covers its manifests' digests, so it pins the image just as firmly.
func resolveOCI(ref Ref, s blobStore, format string) (*Verified, error) {
	raw, err := readPinned(s, ref.Digest, maxManifestBytes, "manifest", "")
	if isNotExist(err) {
		return nil, notFoundError(ref, s)
	}
	if err != nil {
		return nil, err
	}
	v := &Verified{Ref: ref, Digest: ref.Digest, ImageDigest: ref.Digest, Format: format}
	switch kind := manifestKind(raw); {
	case kind.IsIndex():
		d, err := selectPlatform(raw, ref.Digest)
		if err != nil {
			return nil, err
		}
		where := "selected from index " + ref.Digest.String()
		if raw, err = readPinned(s, d.Digest, maxManifestBytes, "manifest", where); err != nil {
			return nil, err
		}
		if int64(len(raw)) != d.Size {
			return nil, &MismatchError{What: "manifest", Where: where, ExpectedSize: d.Size, ActualSize: int64(len(raw))}
		}
		if manifestKind(raw).IsIndex() {
			return nil, fmt.Errorf("image: index %s selects another index %s: pin the image manifest instead: %w", ref.Digest, d.Digest, ErrUnsupported)
		}
		v.ImageDigest = d.Digest
	case kind.IsSchema1():
		return nil, fmt.Errorf("image: %s is a docker schema 1 manifest: %w", ref.Digest, ErrUnsupported)
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("image: parse manifest %s: %w", v.ImageDigest, err)
	}
	if err := fillFromManifest(v, s, m); err != nil {
		return nil, err
	}
	return v, nil
}

// fillFromManifest checks a parsed manifest and its config and records the
// layers to read.
func fillFromManifest(v *Verified, s blobStore, m *v1.Manifest) error {
	if m.SchemaVersion != 2 {
		return fmt.Errorf("image: manifest %s has schemaVersion %d, want 2: %w", v.ImageDigest, m.SchemaVersion, ErrUnsupported)
	}
	if m.MediaType != "" && !m.MediaType.IsImage() {
		return fmt.Errorf("image: %s has media type %q, not an image manifest: %w", v.ImageDigest, m.MediaType, ErrUnsupported)
	}
	if !m.Config.MediaType.IsConfig() {
		return fmt.Errorf("image: %s is not a container image (config media type %q): %w", v.ImageDigest, m.Config.MediaType, ErrUnsupported)
	}
	if m.Config.Digest.Algorithm != "sha256" {
		return fmt.Errorf("image: config digest uses %q, only sha256 is supported: %w", m.Config.Digest.Algorithm, ErrUnsupported)
	}
	if len(m.Layers) > maxLayers {
		return fmt.Errorf("image: manifest lists %d layers, more than %d: %w", len(m.Layers), maxLayers, ErrTooLarge)
	}
	rawCfg, err := readPinned(s, m.Config.Digest, maxConfigBytes, "config", "")
	if err != nil {
		if isNotExist(err) {
			return fmt.Errorf("image: config %s missing from %s: %w", m.Config.Digest, s, ErrNotFound)
		}
		return err
	}
	if int64(len(rawCfg)) != m.Config.Size {
		return &MismatchError{What: "config", ExpectedSize: m.Config.Size, ActualSize: int64(len(rawCfg))}
	}
	cfg, err := parseConfig(rawCfg, len(m.Layers))
	if err != nil {
		return err
	}
	v.Manifest, v.Config, v.ConfigDigest = m, cfg, m.Config.Digest
	v.layers = make([]layer, len(m.Layers))
	for i, d := range m.Layers {
		l := layer{index: i, count: len(m.Layers), digest: d.Digest, size: d.Size, diffID: cfg.RootFS.DiffIDs[i]}
		if err := checkLayerDescriptor(d, l.where()); err != nil {
			return err
		}
		if strings.Contains(string(d.MediaType), "+encrypted") {
			return fmt.Errorf("image: %s is encrypted: %w", l.where(), ErrUnsupported)
		}
		l.open = layerOpener(s, d.Digest)
		v.layers[i] = l
	}
	return nil
}

// manifestKind tells a manifest from an index by its mediaType, or by its
// shape when mediaType is absent (it is optional in older OCI manifests).
func manifestKind(raw []byte) types.MediaType {
	var probe struct {
		MediaType types.MediaType  `json:"mediaType"`
		Manifests *json.RawMessage `json:"manifests"`
		Config    *json.RawMessage `json:"config"`
	}
	if json.Unmarshal(raw, &probe) != nil {
		return ""
	}
	switch {
	case probe.MediaType != "":
		return probe.MediaType
	case probe.Manifests != nil:
		return types.OCIImageIndex
	case probe.Config != nil:
		return types.OCIManifestSchema1
	}
	return ""
}

// selectPlatform picks the one image manifest for linux/GOARCH from an
// index. None, or more than one, is an error: airlock never guesses.
func selectPlatform(raw []byte, digest v1.Hash) (v1.Descriptor, error) {
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("image: parse index %s: %w", digest, err)
	}
	var match []v1.Descriptor
	var seen []string
	for _, d := range idx.Manifests {
		if d.Platform == nil {
			seen = append(seen, "unspecified")
			continue
		}
		seen = append(seen, d.Platform.OS+"/"+d.Platform.Architecture)
		if d.Platform.OS == "linux" && d.Platform.Architecture == hostArch {
			match = append(match, d)
		}
	}
	want := "linux/" + hostArch
	switch len(match) {
	case 0:
		return v1.Descriptor{}, fmt.Errorf("image: index %s has no %s manifest (it has: %s): %w", digest, want, strings.Join(seen, ", "), ErrUnsupported)
	case 1:
		if d := match[0]; d.Digest.Algorithm != "sha256" {
			return v1.Descriptor{}, fmt.Errorf("image: index entry %s uses %s, only sha256 is supported: %w", d.Digest, d.Digest.Algorithm, ErrUnsupported)
		}
		return match[0], nil
	}
	var ds []string
	for _, d := range match {
		ds = append(ds, d.Digest.String())
	}
	return v1.Descriptor{}, fmt.Errorf("image: index %s has %d %s manifests, pin one of them: %s: %w", digest, len(match), want, strings.Join(ds, ", "), ErrUnsupported)
}

// notFoundError words a pin that names no blob. When index.json lists
// exactly one manifest, the pin was simply wrong, and that is said as a
// digest mismatch naming both digests.
func notFoundError(ref Ref, s blobStore) error {
	var listed []string
	var only v1.Hash
	if raw, err := s.rawIndex(); err == nil {
		if idx, err := v1.ParseIndexManifest(bytes.NewReader(raw)); err == nil {
			for _, d := range idx.Manifests {
				listed = append(listed, d.Digest.String())
			}
			if len(idx.Manifests) == 1 {
				only = idx.Manifests[0].Digest
			}
		}
	}
	if len(listed) == 1 {
		return fmt.Errorf("%w (the only image in %s)", &MismatchError{What: "manifest", Expected: ref.Digest, Actual: only}, s)
	}
	if len(listed) == 0 {
		return fmt.Errorf("image: no manifest %s in %s: %w", ref.Digest, s, ErrNotFound)
	}
	return fmt.Errorf("image: no manifest %s in %s (index.json lists %s): %w", ref.Digest, s, strings.Join(listed, ", "), ErrNotFound)
}
