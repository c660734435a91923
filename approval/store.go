package approval

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/internal/privstate"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// The life of a request (docs/approvals.md).
const (
	// DefaultTTL is how long a request stays answerable, and an approval
	// redeemable, when the caller gives no ttl.
	DefaultTTL = 15 * time.Minute
	// MaxTTL is the longest a request may live.
	MaxTTL = 24 * time.Hour
	// sweepAfter is how long an expired request's files are kept, so that
	// a late redemption is told it expired rather than that it never was.
	sweepAfter = time.Hour
)

// Store keeps approval requests and their answers as files in one
// private directory, each sealed with the store's key. A Store is safe for
// concurrent use, and several processes may share one directory: every
// change is one file created exclusively, so an answer is given once and
// an approval redeemed once however many try at the same time.
type Store struct {
	dir     string
	key     []byte
	now     func() time.Time // the clock; tests set it
	maxLive int              // requests not expired that Create allows
}

// DefaultDir returns the per-user directory of approvals,
// $XDG_STATE_HOME/airlock/approvals (else ~/.local/state/airlock/approvals),
// creating it 0700. Every component it creates or opens under the state
// directory is checked: a real directory, not a link, owned by the caller,
// closed to group and others; and the state directory itself writable by
// no one else. Nothing in it may ever be bound into a sandbox.
func DefaultDir() (string, error) {
	base, err := privstate.Base()
	if err == nil {
		base, err = privstate.Dirs(base, "airlock", "approvals")
	}
	if err != nil {
		return "", fmt.Errorf("approval: %w", err)
	}
	return base, nil
}

// OpenStore opens the store in dir, a private directory of the caller's
// (see DefaultDir), creating its key (0600, in dir) on first use. The
// store's files are airlock's private state: the checks of its directory
// and files are internal/privstate's, shared with the audit log's signing
// key.
func OpenStore(dir string) (*Store, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("approval: store %s: %w", dir, err)
	}
	err = privstate.CheckDir(dir)
	var pe *os.PathError
	switch {
	case errors.As(err, &pe):
		return nil, fmt.Errorf("approval: store %s: %w", dir, pe.Err)
	case err != nil:
		return nil, fmt.Errorf("approval: store: %w", err)
	}
	key, err := loadKey(dir)
	if err != nil {
		return nil, err
	}
	return &Store{dir: dir, key: key, now: time.Now, maxLive: defaultMaxLive}, nil
}

const keyName, keySize = "key", 32

// loadKey reads the store's key, creating it first if there is none; of
// two processes creating it at once, the first to link its file wins and
// both use that one.
func loadKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, keyName)
	key, err := privstate.ReadPrivate(path, keySize)
	if errors.Is(err, fs.ErrNotExist) {
		fresh := make([]byte, keySize)
		rand.Read(fresh)
		if err := privstate.WriteOnce(dir, keyName, fresh); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("approval: creating the store's key: %w", err)
		}
		key, err = privstate.ReadPrivate(path, keySize)
	}
	if err != nil {
		return nil, fmt.Errorf("approval: the store's key: %w", err)
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("approval: the store's key %s has %d bytes, not %d: it was not written by airlock; remove the directory's files to start afresh", path, len(key), keySize)
	}
	return key, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// validID reports whether id has the shape of an ID this package mints:
// "apr-" and 32 lower-case hex digits. Nothing else is ever used in a
// file name.
func validID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, "apr-")
	if !ok || len(hexPart) != 32 {
		return false
	}
	for _, c := range []byte(hexPart) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// refusal is an error with an operator's sentence that matches one of the
// Err* reasons.
type refusal struct {
	reason error
	msg    string
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.reason }

func refuse(reason error, format string, args ...any) error {
	return &refusal{reason: reason, msg: "approval: " + fmt.Sprintf(format, args...)}
}

func checkID(id string) error {
	if !validID(id) {
		return refuse(ErrUnknown, "\"%s\" is not an approval id: airlock mints them as apr- and 32 hex digits; check that it was copied whole", termtext.Clip(id, 80))
	}
	return nil
}

func (s *Store) path(id, suffix string) string { return filepath.Join(s.dir, id+suffix) }

// read reads, unseals and decodes the record of id whose file ends in
// "."+name; a missing one is fs.ErrNotExist.
func read[T any](s *Store, id string, kind byte, name string, decode func(*decoder) (T, error)) (T, error) {
	var none T
	data, err := privstate.ReadPrivate(s.path(id, "."+name), maxRecord)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return none, err
		}
		return none, refuse(ErrTampered, "%s: the stored record cannot be trusted: %v", id, err)
	}
	d, err := unseal(s.key, data, kind, id)
	if errors.Is(err, errOutdated) {
		return none, refuse(ErrOutdated, "%s was made by an older airlock, whose approvals bound only the command, tool, session and policy, "+
			"not the program, environment, working directory or stdin: it can be neither answered nor redeemed; ask for the command again to make a new request", id)
	}
	if err != nil {
		return none, refuse(ErrTampered, "%s: the stored %s record was altered or was not written by this store: %v", id, name, err)
	}
	v, err := decode(d)
	if err != nil {
		return none, refuse(ErrTampered, "%s: the stored %s has a valid seal but %v", id, name, err)
	}
	return v, nil
}

func (s *Store) request(id string) (Request, error) {
	if err := checkID(id); err != nil {
		return Request{}, err
	}
	r, err := read(s, id, kindRequest, "request", func(d *decoder) (Request, error) { return decodeRequest(d, id) })
	if errors.Is(err, fs.ErrNotExist) {
		return Request{}, refuse(ErrUnknown, "no request %s was minted by this store (or it expired over %v ago and was swept): it may be mistyped, forged, or from another user's store", id, sweepAfter)
	}
	return r, err
}

// answer returns id's answer, or nil when there is none yet.
func (s *Store) answer(id string) (*Answer, error) {
	a, err := read(s, id, kindAnswer, "answer", decodeAnswer)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &a, nil
}
