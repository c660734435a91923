package audit

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"io"
	"os"

	"golang.org/x/mod/sumdb/tlog"
)

// The Merkle tree over a log (docs/audit.md, "Merkle tree"): leaf i is the
// line of the event with seq i+1, without its newline, hashed as RFC 6962
// says (tlog.RecordHash: SHA-256 of 0x00 and the bytes). Damaged lines that
// a writer closed off are not leaves: the leaves are exactly the chain's
// events, in order, so anyone can compute the tree from the log alone.
// The hashing and the proofs are golang.org/x/mod/sumdb/tlog's; airlock
// only feeds it the lines and keeps its stored hashes.

// LeafHash is the tree's hash of one line (without its newline).
func LeafHash(line []byte) tlog.Hash { return tlog.RecordHash(line) }

// frontierIndexes lists the stored-hash indexes of the complete subtrees
// that make up a tree of n leaves, left to right: the hashes TreeHash
// reads, and the only ones needed to add leaves.
func frontierIndexes(n int64) []int64 {
	var idx []int64
	var lo int64
	for l := 62; l >= 0; l-- {
		if n&(1<<l) != 0 {
			idx = append(idx, tlog.StoredHashIndex(l, lo>>l))
			lo += 1 << l
		}
	}
	return idx
}

// memTree is a tree that keeps only its frontier: enough to add leaves
// and to compute its root at every size, in memory bounded by 63 hashes.
// The verifier uses one to compute a log's root without a sidecar.
type memTree struct {
	n int64
	h map[int64]tlog.Hash
}

func newMemTree() *memTree { return &memTree{h: map[int64]tlog.Hash{}} }

// ReadHashes implements tlog.HashReader over the kept hashes.
func (t *memTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		h, ok := t.h[x]
		if !ok {
			return nil, fmt.Errorf("audit: tree: hash %d is not kept", x)
		}
		out[i] = h
	}
	return out, nil
}

// add appends a leaf.
func (t *memTree) add(leaf tlog.Hash) error {
	hs, err := tlog.StoredHashesForRecordHash(t.n, leaf, t)
	if err != nil {
		return err
	}
	at := tlog.StoredHashIndex(0, t.n)
	for i, h := range hs {
		t.h[at+int64(i)] = h
	}
	t.n++
	if len(t.h) > 128 {
		keep := map[int64]tlog.Hash{}
		for _, x := range frontierIndexes(t.n) {
			keep[x] = t.h[x]
		}
		t.h = keep
	}
	return nil
}

// root is the tree's root hash.
func (t *memTree) root() (tlog.Hash, error) { return tlog.TreeHash(t.n, t) }

// sidecarSuffix names a log's tree file: the log's path and this.
const sidecarSuffix = ".tree"

// The sidecar holds a header, then every stored hash of the tree
// (tlog.StoredHashIndex order), 32 bytes each. The header says what part
// of the log the hashes cover: n leaves, the log's size up to the end of
// leaf n's line, and that line's chain hash. It is a cache: nothing in it
// is trusted until checked against the log (see syncTree), and a missing
// or wrong one is rebuilt from the log.
const (
	sidecarMagic  = "airlock-tree v1\n"
	sidecarHeader = 64
)

// sideTree is a log's tree kept in its sidecar file.
type sideTree struct {
	f       *os.File
	path    string    // the log's
	chainID string    // the log's, when known
	n       int64     // leaves covered
	off     int64     // the log's size up to the end of leaf n's line
	head    tlog.Hash // leaf n's chain hash (zero for n == 0)
	// buf holds hashes from index bufAt on, not yet written.
	bufAt int64
	buf   []tlog.Hash
}

// openSideTree opens (creating, 0600) the sidecar of the log at path and
// reads its header; a header that is not one yields an empty tree.
func openSideTree(path, chainID string) (*sideTree, error) {
	f, err := os.OpenFile(path+sidecarSuffix, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: tree: %w", err)
	}
	t := &sideTree{f: f, path: path, chainID: chainID}
	var h [sidecarHeader]byte
	if _, err := f.ReadAt(h[:], 0); err == nil && string(h[:16]) == sidecarMagic {
		t.n, t.off = int64(binary.BigEndian.Uint64(h[16:])), int64(binary.BigEndian.Uint64(h[24:]))
		copy(t.head[:], h[32:])
		fi, err := f.Stat()
		if err != nil || t.n < 0 || t.off < 0 || fi.Size() < sidecarHeader+32*tlog.StoredHashCount(t.n) {
			t.n, t.off, t.head = 0, 0, tlog.Hash{}
		}
	}
	t.bufAt = tlog.StoredHashCount(t.n)
	return t, nil
}

func (t *sideTree) close() error { return t.f.Close() }

// reset makes the tree empty, to be rebuilt from the log.
func (t *sideTree) reset() {
	t.n, t.off, t.head, t.bufAt, t.buf = 0, 0, tlog.Hash{}, 0, nil
}

// cut shrinks the tree to its first n leaves, whose last line ends at off
// in the log and has chain hash head.
func (t *sideTree) cut(n, off int64, head tlog.Hash) error {
	if err := t.flush(); err != nil {
		return err
	}
	t.n, t.off, t.head = n, off, head
	t.bufAt, t.buf = tlog.StoredHashCount(n), nil
	return nil
}

// ReadHashes implements tlog.HashReader.
func (t *sideTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	limit := t.bufAt + int64(len(t.buf))
	for i, x := range idx {
		switch {
		case x < 0 || x >= limit:
			return nil, fmt.Errorf("audit: tree: hash %d is beyond the tree's %d", x, limit)
		case x >= t.bufAt:
			out[i] = t.buf[x-t.bufAt]
		default:
			if _, err := t.f.ReadAt(out[i][:], sidecarHeader+32*x); err != nil {
				return nil, fmt.Errorf("audit: tree: read: %w", err)
			}
		}
	}
	return out, nil
}

// add appends the leaf of a line that ends at off with chain hash head.
func (t *sideTree) add(line []byte, off int64, head tlog.Hash) error {
	hs, err := tlog.StoredHashes(t.n, line, t)
	if err != nil {
		return err
	}
	t.buf = append(t.buf, hs...)
	t.n, t.off, t.head = t.n+1, off, head
	return nil
}

// flush writes the new hashes, then the header that covers them.
func (t *sideTree) flush() error {
	if len(t.buf) > 0 {
		b := make([]byte, 0, 32*len(t.buf))
		for _, h := range t.buf {
			b = append(b, h[:]...)
		}
		if _, err := t.f.WriteAt(b, sidecarHeader+32*t.bufAt); err != nil {
			return fmt.Errorf("audit: tree: write: %w", err)
		}
		t.bufAt += int64(len(t.buf))
		t.buf = nil
	}
	var h [sidecarHeader]byte
	copy(h[:], sidecarMagic)
	binary.BigEndian.PutUint64(h[16:], uint64(t.n))
	binary.BigEndian.PutUint64(h[24:], uint64(t.off))
	copy(h[32:], t.head[:])
	if _, err := t.f.WriteAt(h[:], 0); err != nil {
		return fmt.Errorf("audit: tree: write: %w", err)
	}
	return nil
}

// root is the root hash of the tree's first n leaves.
func (t *sideTree) root(n int64) (tlog.Hash, error) {
	if n > t.n {
		return tlog.Hash{}, fmt.Errorf("audit: tree: size %d is beyond the tree's %d", n, t.n)
	}
	return tlog.TreeHash(n, t)
}

// errLogChanged is matched by the error of a tree that cannot be brought
// up to date because the log does not continue the lines it covers.
var errLogChanged = errors.New("the log does not continue the records the tree covers")

// syncTree brings t up to date with the log f of the given size (its lock
// held): it checks that the log still holds, where t says, the line t
// ends with, then adds the events after it, checking their chain. When
// the check fails, or scratch is set, it rebuilds t from the start of the
// log. It stops before a final line without its newline.
func syncTree(f *os.File, size int64, t *sideTree, scratch bool) error {
	if !scratch && t.n > 0 && !t.endsAt(f, size) {
		scratch = true
	}
	err := errLogChanged
	if !scratch {
		err = t.extend(f, size)
	}
	if errors.Is(err, errLogChanged) {
		err = t.rebuild(f, size)
	}
	if err != nil {
		return err
	}
	return t.flush()
}

// rebuild makes t again from the log's files: its earlier files (rotated,
// see Rotate) as far back as they are at hand, then f.
func (t *sideTree) rebuild(f *os.File, size int64) error {
	t.reset()
	for _, p := range predecessors(t.path) {
		pf, fi, err := hostfile.Open(p)
		if err != nil {
			return fmt.Errorf("audit: tree: %w", err)
		}
		t.off = 0
		err = t.extend(pf, fi.Size())
		pf.Close()
		if err != nil {
			return fmt.Errorf("%w (in %s)", err, p)
		}
	}
	t.off = 0
	return t.extend(f, size)
}

// endsAt reports whether the log, of the given size, has at t.off the end
// of the line of leaf t.n, with t.head as its hash.
func (t *sideTree) endsAt(f *os.File, size int64) bool {
	if t.off > size || t.off == 0 {
		return false
	}
	lines, partial, err := lastLines(f, t.off, 1)
	if err != nil || partial || len(lines) != 1 {
		return false
	}
	ev, err := ParseLine(lines[0])
	return err == nil && int64(ev.Seq) == t.n && ev.Hash == hexHash(t.head)
}

// extend adds the events of the log from t.off on, checking that they
// chain onto leaf t.n.
func (t *sideTree) extend(f *os.File, size int64) error {
	v := NewVerifier("")
	if t.n > 0 {
		v = resumeVerifier(uint64(t.n), hexHash(t.head), t.chainID)
	}
	off := t.off
	if off > size {
		return fmt.Errorf("audit: tree: %w: the log is shorter than the records the tree covers", errLogChanged)
	}
	lr := newLineReader(io.NewSectionReader(f, off, size-off), MaxLineBytes)
	for {
		line, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			if v.pending != nil { // a whole damaged line that no repair follows
				return fmt.Errorf("audit: tree: %w: %w", errLogChanged, v.fail(v.pending.line, v.pending.reason))
			}
			return nil // a partial line is not a leaf yet
		case errors.Is(err, ErrLineTooLong):
			return fmt.Errorf("audit: tree: %w: %w", errLogChanged, v.TooLong())
		case err != nil:
			return fmt.Errorf("audit: tree: read: %w", err)
		}
		off += int64(len(line)) + 1
		ev, ok, err := v.Line(line)
		if err != nil {
			return fmt.Errorf("audit: tree: %w: %w", errLogChanged, err)
		}
		if !ok {
			continue // damaged: the next line must be its repair
		}
		if isContinuation(&ev) {
			if err := t.continued(&ev); err != nil {
				return fmt.Errorf("audit: tree: %w: %w", errLogChanged, err)
			}
		}
		t.chainID = cmp.Or(t.chainID, v.rep.ChainID)
		if int64(ev.Seq) != t.n+1 {
			return fmt.Errorf("audit: tree: %w: seq %d follows leaf %d", errLogChanged, ev.Seq, t.n)
		}
		if err := t.add(line, off, parseHexHash(ev.Hash)); err != nil {
			return err
		}
	}
}

// continued checks a chain_continued record against the tree, or, for a
// tree that starts with it (the earlier files are not at hand), seeds the
// tree with the frontier it carries: every root from then on is right,
// and the proofs that need hashes of the earlier files fail their check.
func (t *sideTree) continued(ev *Event) error {
	fr, err := continuedFrontier(ev)
	if err != nil {
		return err
	}
	n := int64(ev.Seq) - 1
	if t.n == 0 && n > 0 {
		t.buf = make([]tlog.Hash, tlog.StoredHashCount(n))
		for i, h := range fr {
			t.buf[i] = h
		}
		t.n, t.bufAt, t.chainID = n, 0, ev.Context.ChainID
		return nil
	}
	have, err := t.ReadHashes(frontierIndexes(n))
	if err != nil {
		return err
	}
	for i, x := range frontierIndexes(n) {
		if have[i] != fr[x] {
			return fmt.Errorf("the continuation at seq %d carries another tree than the records before it", ev.Seq)
		}
	}
	return nil
}

// hexHash writes a chain hash as the log does: 64 lower-case hex digits.
func hexHash(h tlog.Hash) string { return hex.EncodeToString(h[:]) }

// parseHexHash reads a chain hash that ParseLine has checked.
func parseHexHash(s string) tlog.Hash {
	var h tlog.Hash
	hex.Decode(h[:], []byte(s))
	return h
}
