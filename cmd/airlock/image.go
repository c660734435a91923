package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/image"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Verify and unpack pinned-digest sandbox images",
		Long: `image checks a local image against the digest that pins it, and unpacks it into
airlock's content-addressed cache, as "--image PATH@sha256:DIGEST" does.

PATH is an OCI image layout directory, an OCI archive, or "docker save" output.
DIGEST is the image manifest's digest, an index's (the linux manifest for this
host's architecture is then used), or, for a docker-archive without an OCI
index, the image ID (docker inspect --format '{{.Id}}').

Exit status 0 when the image verified; 1 when it did not (a digest mismatch
names the expected and the actual digest); 2 for a usage error.`,
	}
	cmd.AddCommand(newImageVerifyCmd(), newImageUnpackCmd())
	return cmd
}

// imageRef parses the one PATH@sha256:DIGEST argument.
func imageRef(args []string) (image.Ref, error) {
	if len(args) != 1 {
		return image.Ref{}, usageError{errors.New("image: want one PATH@sha256:DIGEST argument")}
	}
	r, err := image.ParseRef(args[0])
	if err != nil {
		return image.Ref{}, usageError{err}
	}
	return r, nil
}

// imageResult is what "image verify --json" and "image unpack --json" print.
type imageResult struct {
	Ref          string       `json:"ref"`
	Digest       string       `json:"digest"`
	ImageDigest  string       `json:"imageDigest"`
	ConfigDigest string       `json:"configDigest"`
	Format       string       `json:"format"`
	Layers       int          `json:"layers"`
	Rootfs       string       `json:"rootfs,omitempty"`
	Cached       *bool        `json:"cached,omitempty"`
	Stats        *image.Stats `json:"stats,omitempty"`
}

func newImageResult(v *image.Verified) imageResult {
	n := len(v.Config.RootFS.DiffIDs)
	return imageResult{Ref: v.Ref.String(), Digest: v.Digest.String(), ImageDigest: v.ImageDigest.String(),
		ConfigDigest: v.ConfigDigest.String(), Format: v.Format, Layers: n}
}

func newImageVerifyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify PATH@sha256:DIGEST [--json]",
		Short: "Verify the manifest, config and every layer against the pinned digest",
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := imageRef(args)
			if err != nil {
				return err
			}
			v, err := image.Verify(cmd.Context(), ref)
			if err != nil {
				return &exitError{Code: exitFailed, Err: err}
			}
			if asJSON {
				return termtext.WriteJSON(cmd.OutOrStdout(), newImageResult(v), "")
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: %s, image %s, %d layers verified\n", ref, v.Format, v.ImageDigest, len(v.Config.RootFS.DiffIDs))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func newImageUnpackCmd() *cobra.Command {
	var (
		asJSON   bool
		cacheDir string
		opts     image.Options
	)
	cmd := &cobra.Command{
		Use:   "unpack PATH@sha256:DIGEST [--cache DIR] [--reverify] [--json]",
		Short: "Verify the image and print the path of its unpacked rootfs",
		Long: `unpack verifies the image and unpacks it, once, into the cache (--cache, default
$XDG_CACHE_HOME/airlock/images), then prints the rootfs path. Later runs reuse
the cached tree after checking the manifest and config again; --reverify
unpacks afresh and compares the cached tree with it file by file.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := imageRef(args)
			if err != nil {
				return err
			}
			p, err := image.Prepare(cmd.Context(), ref, cacheDir, opts)
			if err != nil {
				return &exitError{Code: exitFailed, Err: err}
			}
			if asJSON {
				r := newImageResult(p.Verified)
				r.Rootfs, r.Cached, r.Stats = p.Rootfs, &p.Cached, &p.Stats
				return termtext.WriteJSON(cmd.OutOrStdout(), r, "")
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), p.Rootfs)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().StringVar(&cacheDir, "cache", "", "cache directory (default $XDG_CACHE_HOME/airlock/images)")
	cmd.Flags().BoolVar(&opts.Reverify, "reverify", false, "distrust the cached tree: unpack afresh and compare")
	return cmd
}
