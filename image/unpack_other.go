//go:build !linux

package image

import (
	"archive/tar"
	"context"
	"fmt"
)

// errNoSafeUnpack: unpacking relies on Linux's openat2 to keep every write
// below the root; elsewhere it is refused rather than done less safely.
var errNoSafeUnpack = fmt.Errorf("image: unpacking needs Linux (openat2 RESOLVE_BENEATH): %w", ErrUnsupported)

type extractor struct{}

func newExtractor(string, Options, *Stats) (*extractor, error) { return nil, errNoSafeUnpack }

func (*extractor) layer(context.Context, int, *tar.Reader) error { return errNoSafeUnpack }
func (*extractor) finish() error                                 { return errNoSafeUnpack }
func (*extractor) close()                                        {}

func checkPrivate(string) error         { return errNoSafeUnpack }
func syncFS(string) error               { return errNoSafeUnpack }
func compareTrees(string, string) error { return errNoSafeUnpack }
