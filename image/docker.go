package image

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// resolveDockerArchive resolves a pin in a legacy `docker save` archive,
// which holds no manifest blob: manifest.json (go-containerregistry's
// tarball.Manifest) names each image's config and layer tars by file name
// only. Such an image is pinned by its config digest, the image ID
// (`docker inspect --format '{{.Id}}'`): the config lists every layer's
// uncompressed digest (rootfs.diff_ids), so it pins the layers.
func resolveDockerArchive(ref Ref, a *archiveStore) (*Verified, error) {
	rc, _, err := a.open("manifest.json")
	if err != nil {
		return nil, fmt.Errorf("image: %s: %w", a, err)
	}
	raw, err := readLimited(rc, maxManifestBytes, "manifest.json")
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("image: %s: %w", a, err)
	}
	var tm tarball.Manifest
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("image: %s: parse manifest.json: %w", a, err)
	}
	var ids []v1.Hash
	for _, d := range tm {
		cfgRaw, err := readMember(a, d.Config, maxConfigBytes)
		if err != nil {
			return nil, fmt.Errorf("image: %s: config %q: %w", a, d.Config, err)
		}
		id := sha256Of(cfgRaw)
		if id != ref.Digest {
			ids = append(ids, id)
			continue
		}
		if len(d.Layers) > maxLayers {
			return nil, fmt.Errorf("image: manifest.json lists %d layers, more than %d: %w", len(d.Layers), maxLayers, ErrTooLarge)
		}
		cfg, err := parseConfig(cfgRaw, len(d.Layers))
		if err != nil {
			return nil, err
		}
		v := &Verified{Ref: ref, Digest: ref.Digest, ImageDigest: id, Format: FormatDockerArchive, ConfigDigest: id, Config: cfg}
		v.layers = make([]layer, len(d.Layers))
		for i, name := range d.Layers {
			v.layers[i] = layer{index: i, count: len(d.Layers), size: -1, diffID: cfg.RootFS.DiffIDs[i], open: memberOpener(a, name)}
		}
		return v, nil
	}
	hint := "a docker-archive without an OCI index is pinned by its image ID (the config digest)"
	if len(ids) == 1 {
		return nil, fmt.Errorf("%w (%s; %s)", &MismatchError{What: "config", Expected: ref.Digest, Actual: ids[0]}, a, hint)
	}
	held := make([]string, len(ids))
	for i, id := range ids {
		held[i] = id.String()
	}
	return nil, fmt.Errorf("image: no image with ID %s in %s (it holds %s; %s): %w", ref.Digest, a, strings.Join(held, ", "), hint, ErrNotFound)
}

func readMember(a *archiveStore, name string, limit int64) ([]byte, error) {
	rc, _, err := a.open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readLimited(rc, limit, name)
}

func memberOpener(a *archiveStore, name string) func() (io.ReadCloser, int64, error) {
	return func() (io.ReadCloser, int64, error) { return a.open(name) }
}
