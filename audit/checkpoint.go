package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is a signed statement of a log's tree: its origin (the
// log's name), size and root hash, in the C2SP tlog-checkpoint format,
// signed as a C2SP signed note (docs/audit.md, "Checkpoints").
type Checkpoint struct {
	// Origin names the log: the key's name, "/", the log's chain id.
	Origin string `json:"origin"`
	// Size is the number of records (leaves) the tree holds.
	Size int64 `json:"size"`
	// Root is the tree's root hash.
	Root tlog.Hash `json:"root"`
	// Note is the signed note, exactly as signed: the checkpoint's text
	// (origin, size and root, a line each), a blank line, the signature.
	Note string `json:"note"`
}

// CheckpointSuffix names the copy of a log's latest checkpoint kept beside
// it: the log's path and this.
const CheckpointSuffix = ".checkpoint"

// maxNote bounds a checkpoint file.
const maxNote = 16 << 10

// ErrInconsistent is matched (errors.Is) by the error of a checkpoint that
// the log does not extend: records it covers were removed or changed.
var ErrInconsistent = errors.New("the log is not consistent with the checkpoint")

// checkpointText is a checkpoint's body: origin, size, base64 root.
func checkpointText(origin string, size int64, root tlog.Hash) string {
	return fmt.Sprintf("%s\n%d\n%s\n", origin, size, root)
}

// ParseCheckpoint checks the signed note b with the verifier key vkey
// (NAME+HASH+KEY) and reads the checkpoint it holds.
func ParseCheckpoint(b []byte, vkey string) (Checkpoint, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("audit: the public key: %w", err)
	}
	n, err := note.Open(b, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("audit: checkpoint: not signed by the key %s: %w", v.Name(), err)
	}
	lines := strings.SplitN(n.Text, "\n", 4)
	if len(lines) < 4 {
		return Checkpoint{}, errors.New("audit: checkpoint: want origin, size and root hash lines")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return Checkpoint{}, errors.New("audit: checkpoint: the size line is not a decimal number")
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return Checkpoint{}, errors.New("audit: checkpoint: the root line is not a base64 SHA-256 hash")
	}
	return Checkpoint{Origin: lines[0], Size: size, Root: root, Note: string(b)}, nil
}

// ReadCheckpointFile reads and checks a checkpoint file: a regular file
// only, opened without blocking (a FIFO or a device in its place is
// refused, never waited on).
func ReadCheckpointFile(path, vkey string) (Checkpoint, error) {
	b, err := hostfile.ReadFile(path, maxNote)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("audit: %w", err)
	}
	if len(b) > maxNote {
		return Checkpoint{}, fmt.Errorf("audit: %s is longer than a checkpoint", path)
	}
	return ParseCheckpoint(b, vkey)
}

// OriginChain returns the chain id an origin names (its last element).
func OriginChain(origin string) string { return origin[strings.LastIndexByte(origin, '/')+1:] }

// lastSigned is what a Signer keeps of the last checkpoint it signed for a
// log: the checkpoint and where in the log its last record ends.
type lastSigned struct {
	Note   string `json:"note"`
	Offset int64  `json:"offset"`
	Head   string `json:"head"`
	// Start is the number of records before the file Offset is in: 0 for
	// the log's first file, N for the file a rotation began after seq N.
	Start int64 `json:"start"`
	cp    Checkpoint
	n     uint64 // its counter in the kept file
}

// lastName is the file of a log's last checkpoint in the key's directory.
func lastName(chainID string) string { return chainID + ".checkpoint" }

// last returns the last checkpoint s signed for the log chainID, or nil.
func (s *Signer) last(chainID string) (*lastSigned, error) {
	b, n, err := readKept(filepath.Join(s.dir, lastName(chainID)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: the last checkpoint signed: %w", err)
	}
	var ls lastSigned
	if err := json.Unmarshal(b, &ls); err != nil || !IsHash(ls.Head) || ls.Offset < 0 {
		return nil, fmt.Errorf("audit: the last checkpoint signed (%s) is damaged", lastName(chainID))
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	if ls.cp, err = ParseCheckpoint([]byte(ls.Note), s.PublicKey()); err != nil {
		return nil, fmt.Errorf("audit: the last checkpoint signed (%s): %w", lastName(chainID), err)
	}
	ls.n = n
	return &ls, nil
}

// sign signs a checkpoint of the tree t of the log chainID, and keeps it
// durably as the last one (kept.go), before anyone is given it.
func (s *Signer) sign(chainID string, t *sideTree, start int64, last *lastSigned) (Checkpoint, error) {
	root, err := t.root(t.n)
	if err != nil {
		return Checkpoint{}, err
	}
	if err := s.Check(); err != nil {
		return Checkpoint{}, err
	}
	k, _ := s.keys()
	origin := s.Name() + "/" + chainID
	b, err := note.Sign(&note.Note{Text: checkpointText(origin, t.n, root)}, k.signer)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("audit: sign the checkpoint: %w", err)
	}
	state, _ := json.Marshal(lastSigned{Note: string(b), Offset: t.off, Head: hexHash(t.head), Start: start})
	var n uint64
	if last != nil {
		n = last.n + 1
	}
	if err := writeKept(s.dir, lastName(chainID), state, n); err != nil {
		return Checkpoint{}, fmt.Errorf("audit: keep the checkpoint: %w", err)
	}
	return Checkpoint{Origin: origin, Size: t.n, Root: root, Note: string(b)}, nil
}

// WithSigner makes the Log able to sign checkpoints (Checkpoint), and
// sign one when it is closed after appending.
func WithSigner(s *Signer) Option { return func(l *Log) { l.signer = s } }

// Signer returns the Log's signer, or nil.
func (l *Log) Signer() *Signer { return l.signer }

// Checkpoint signs a checkpoint of the whole log with the Log's signer and
// returns it; when the log has no record since the last checkpoint this
// signer signed, it returns that one. It never signs a checkpoint that is
// not consistent with the last one it signed: the new tree is that one's
// leaves (checked against its root) followed by the records the log now
// holds after them (checked against their chain), else ErrInconsistent.
// The log is synced first, so that no record a checkpoint covers can be
// lost in a crash. The latest checkpoint is also written beside the log
// (CheckpointSuffix).
func (l *Log) Checkpoint() (Checkpoint, error) {
	if l.signer == nil {
		return Checkpoint{}, errors.New("audit: no signing key")
	}
	if err := l.lock(); err != nil {
		return Checkpoint{}, err
	}
	defer l.unlock()
	return l.checkpoint()
}

// checkpoint is Checkpoint with the file locked.
func (l *Log) checkpoint() (Checkpoint, error) {
	fi, err := l.f.Stat()
	if err != nil {
		return Checkpoint{}, fmt.Errorf("audit: %w", err)
	}
	size := fi.Size()
	// Every record the checkpoint covers must be on disk first. When the
	// file is as this Log's last synced append left it, it is.
	if size != l.knownSize || l.unsynced {
		if err := syncData(l.f); err != nil {
			return Checkpoint{}, fmt.Errorf("audit: sync %s: %w", l.path, err)
		}
		l.unsynced = false
	}
	chainID, err := l.chain()
	if err != nil {
		return Checkpoint{}, err
	}
	last, err := l.signer.last(chainID)
	if err != nil {
		return Checkpoint{}, err
	}
	t, err := openSideTree(l.path, chainID)
	if err != nil {
		return Checkpoint{}, err
	}
	defer t.close()
	start, first, err := fileStart(l.f)
	if err != nil {
		return Checkpoint{}, err
	}
	if err := extendSigned(l.f, size, t, last, start, first); err != nil {
		return Checkpoint{}, fmt.Errorf("%w (in %s)", err, l.path)
	}
	l.appended = false
	if last != nil && t.n == last.cp.Size {
		return last.cp, nil
	}
	cp, err := l.signer.sign(chainID, t, start, last)
	if err != nil {
		l.appended = true
		return Checkpoint{}, err
	}
	// The copy beside the log is for readers; the signer's own is the one
	// that counts, so this one is not synced.
	_ = replaceFile(l.path+CheckpointSuffix, []byte(cp.Note))
	return cp, nil
}

// extendSigned brings t up to date with the log as an extension of the
// last signed checkpoint: t's first last.Size leaves must have its root
// (else t is rebuilt from the log, and must then), and the records after
// them are read again from the log, from where the checkpoint's last
// record ends, chained onto it. With no last checkpoint, t is rebuilt
// from the whole log. start and first are the current file's (fileStart):
// a checkpoint signed in the file before a rotation, at its end, goes on
// from the start of this one.
func extendSigned(f *os.File, size int64, t *sideTree, last *lastSigned, start int64, first *Event) error {
	if last == nil {
		return syncTree(f, size, t, true)
	}
	n := last.cp.Size
	matches := func() bool { r, err := t.root(n); return err == nil && r == last.cp.Root }
	off := last.Offset
	if last.Start != start {
		off = -1
		if n == start && first.Prev == last.Head {
			off = 0
		}
	}
	if off >= 0 && matches() {
		if err := t.cut(n, off, parseHexHash(last.Head)); err != nil {
			return err
		}
		err := t.extend(f, size)
		if err == nil {
			return t.flush()
		}
		if !errors.Is(err, errLogChanged) {
			return err
		}
	}
	err := syncTree(f, size, t, true)
	switch {
	case err != nil && !errors.Is(err, errLogChanged):
		return err
	case t.n < n || !matches():
		return fmt.Errorf("audit: %w signed at size %d: records it covers were removed or changed since", ErrInconsistent, n)
	case err != nil:
		return fmt.Errorf("audit: %w signed at size %d: the records after it do not chain onto it", ErrInconsistent, n)
	}
	return nil
}

// chain returns the log's chain id, from its first line.
func (l *Log) chain() (string, error) {
	if l.chainID != "" {
		return l.chainID, nil
	}
	_, first, err := fileStart(l.f)
	if err != nil || !isHex(first.Context.ChainID, chainIDLen) {
		return "", fmt.Errorf("audit: the first line of %s carries no chain id", l.path)
	}
	l.chainID = first.Context.ChainID
	return l.chainID, nil
}

// replaceFile writes data to path through a temporary file renamed into
// place, not synced. The temporary file is made new (O_EXCL, never through
// a link left in its place: whoever could write the log's directory
// would have airlock write the checkpoint wherever the link points).
func replaceFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := writeNew(tmp, data, 0o644, false); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
