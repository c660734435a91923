package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// zstdMaxWindow bounds the memory a zstd layer may make the decoder use:
// 128 MiB covers `zstd --long=27`, the largest window common tools emit.
const zstdMaxWindow = 1 << 27

// layer is one layer to read: how to open its stored bytes and the
// digests that pin them.
type layer struct {
	index, count int
	open         func() (io.ReadCloser, int64, error)
	digest       v1.Hash // digest of the stored bytes; zero for a legacy docker-archive
	size         int64   // stored size; -1 when the manifest does not give one
	diffID       v1.Hash // digest of the uncompressed tar (config rootfs.diff_ids)
}

func (l *layer) where() string { return fmt.Sprintf("layer %d of %d", l.index+1, l.count) }

// hashReader hashes and counts what passes through it.
type hashReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func newHashReader(r io.Reader) *hashReader { return &hashReader{r: r, h: sha256.New()} }

func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

func (h *hashReader) sum() v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.h.Sum(nil))}
}

// budget is a byte allowance shared by every layer of one unpack: the
// decompression-bomb cap.
type budget struct {
	left int64
	cap  int64
	what string
}

func (b *budget) take(n int64) error {
	b.left -= n
	if b.left < 0 {
		return fmt.Errorf("image: %s exceed the cap of %d bytes: %w", b.what, b.cap, ErrTooLarge)
	}
	return nil
}

// capReader charges every byte read to a budget and fails once it is spent.
type capReader struct {
	r   io.Reader
	b   *budget
	ctx context.Context
}

func (c *capReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if berr := c.b.take(int64(n)); berr != nil {
		return n, berr
	}
	return n, err
}

// layerStream reads one layer: it hashes the stored bytes, decompresses
// (gzip, zstd or none, told by the magic bytes: the stored bytes are pinned
// by digest, so sniffing cannot be abused) and hashes the tar stream.
type layerStream struct {
	l      *layer
	rc     io.ReadCloser
	stored *hashReader
	tar    *hashReader
	closeD func()
}

func openLayer(ctx context.Context, l *layer, b *budget) (*layerStream, error) {
	rc, size, err := l.open()
	if err != nil {
		return nil, fmt.Errorf("image: open %s: %w", l.where(), err)
	}
	if l.size >= 0 && size != l.size {
		rc.Close()
		return nil, &MismatchError{What: "layer", Where: l.where(), ExpectedSize: l.size, ActualSize: size}
	}
	limit := size + 1 // one byte more than stated, so growth is seen
	s := &layerStream{l: l, rc: rc, stored: newHashReader(io.LimitReader(rc, limit)), closeD: func() {}}
	br := bufio.NewReaderSize(s.stored, 64<<10)
	head, _ := br.Peek(4)
	var dec io.Reader = br
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return s.fail(fmt.Errorf("image: %s: gzip: %w", l.where(), err))
		}
		dec, s.closeD = zr, func() { zr.Close() }
	case bytes.HasPrefix(head, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return s.fail(fmt.Errorf("image: %s: zstd: %w", l.where(), err))
		}
		dec, s.closeD = zr, zr.Close
	}
	s.tar = newHashReader(&capReader{r: dec, b: b, ctx: ctx})
	return s, nil
}

// fail checks the stored digest before reporting err: a tampered layer
// usually breaks decompression first, and the digest mismatch is the cause
// worth naming.
func (s *layerStream) fail(err error) (*layerStream, error) {
	if mm := s.checkStored(); mm != nil {
		err = mm
	}
	s.close()
	return nil, err
}

// checkStored reads the rest of the stored bytes and compares their size
// and digest with the manifest's. It returns nil when the layer has no
// stored digest (legacy docker-archive).
func (s *layerStream) checkStored() error {
	if s.l.digest == (v1.Hash{}) {
		return nil
	}
	if _, err := io.Copy(io.Discard, s.stored); err != nil {
		return fmt.Errorf("image: read %s: %w", s.l.where(), err)
	}
	if got := s.stored.sum(); got != s.l.digest {
		return &MismatchError{What: "layer", Where: s.l.where(), Expected: s.l.digest, Actual: got}
	}
	if s.l.size >= 0 && s.stored.n != s.l.size {
		return &MismatchError{What: "layer", Where: s.l.where(), ExpectedSize: s.l.size, ActualSize: s.stored.n}
	}
	return nil
}

// finish drains the layer (the tar end-of-archive marker need not be the
// end of the stream) and checks both digests. After an error while the
// layer was being read, pass it as cause: finish then reports a digest
// mismatch in its place when there is one.
func (s *layerStream) finish(cause error) error {
	defer s.close()
	if cause != nil {
		if mm := s.checkStored(); mm != nil {
			return mm
		}
		if s.l.digest == (v1.Hash{}) {
			// No stored digest (legacy docker-archive): finish hashing
			// the tar, under the cap, to name a tampered layer as such.
			if _, err := io.Copy(io.Discard, s.tar); err == nil && s.tar.sum() != s.l.diffID {
				return &MismatchError{What: "layer diff_id", Where: s.l.where(), Expected: s.l.diffID, Actual: s.tar.sum()}
			}
		}
		return cause
	}
	if _, err := io.Copy(io.Discard, s.tar); err != nil {
		if mm := s.checkStored(); mm != nil {
			return mm
		}
		return fmt.Errorf("image: read %s: %w", s.l.where(), err)
	}
	if err := s.checkStored(); err != nil {
		return err
	}
	if got := s.tar.sum(); got != s.l.diffID {
		return &MismatchError{What: "layer diff_id", Where: s.l.where(), Expected: s.l.diffID, Actual: got}
	}
	return nil
}

func (s *layerStream) close() {
	s.closeD()
	s.rc.Close()
}
