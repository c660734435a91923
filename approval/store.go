package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

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
	dir string
	key []byte
	now func() time.Time // the clock; tests set it
}

// DefaultDir returns the per-user directory of approvals,
// $XDG_STATE_HOME/airlock/approvals (else ~/.local/state/airlock/approvals),
// creating it 0700. Every component it creates or opens under the state
// directory is checked: a real directory, not a link, owned by the caller,
// closed to group and others; and the state directory itself writable by
// no one else. Nothing in it may ever be bound into a sandbox.
func DefaultDir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return "", errors.New("approval: no directory for approvals: set $XDG_STATE_HOME or $HOME to an absolute path")
		}
		base = filepath.Join(home, ".local", "state")
	}
	return privateDirs(base, "airlock", "approvals")
}

// OpenStore opens the store in dir, a private directory of the caller's
// (see DefaultDir), creating its key (0600, in dir) on first use.
func OpenStore(dir string) (*Store, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("approval: store %s: %w", dir, err)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	key, err := loadKey(dir)
	if err != nil {
		return nil, err
	}
	return &Store{dir: dir, key: key, now: time.Now}, nil
}

const keyName, keySize = "key", 32

// loadKey reads the store's key, creating it first if there is none; of
// two processes creating it at once, the first to link its file wins and
// both use that one.
func loadKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, keyName)
	key, err := readPrivate(path, keySize)
	if errors.Is(err, fs.ErrNotExist) {
		fresh := make([]byte, keySize)
		rand.Read(fresh)
		if err := writeOnce(dir, keyName, fresh); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("approval: creating the store's key: %w", err)
		}
		key, err = readPrivate(path, keySize)
	}
	if err != nil {
		return nil, fmt.Errorf("approval: the store's key: %w", err)
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("approval: the store's key %s has %d bytes, not %d: it was not written by airlock; remove the directory's files to start afresh", path, len(key), keySize)
	}
	return key, nil
}

// writeOnce writes data to dir/name through a temporary file (O_EXCL,
// 0600, synced) linked into place: the name appears complete or not at
// all, and never replaces what is there (fs.ErrExist). link, not
// rename, because rename would replace an existing answer.
func writeOnce(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, ".tmp-"+randomHex(8))
	f, err := createExcl(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp, filepath.Join(dir, name)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return err
	}
	return syncDir(dir)
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
		return refuse(ErrUnknown, "\"%s\" is not an approval id: airlock mints them as apr- and 32 hex digits; check that it was copied whole", termtext.Clean(id, 80))
	}
	return nil
}

func (s *Store) path(id, suffix string) string { return filepath.Join(s.dir, id+suffix) }

// read reads and unseals one record of id; a missing one is fs.ErrNotExist.
func (s *Store) read(id string, kind byte, suffix string) (*decoder, error) {
	data, err := readPrivate(s.path(id, suffix), maxRecord)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, refuse(ErrTampered, "%s: the stored record cannot be trusted: %v", id, err)
	}
	d, err := unseal(s.key, data, kind, id)
	if err != nil {
		return nil, refuse(ErrTampered, "%s: the stored %s record was altered or was not written by this store: %v", id, strings.TrimPrefix(suffix, "."), err)
	}
	return d, nil
}

func (s *Store) request(id string) (Request, error) {
	if err := checkID(id); err != nil {
		return Request{}, err
	}
	d, err := s.read(id, kindRequest, ".request")
	if errors.Is(err, fs.ErrNotExist) {
		return Request{}, refuse(ErrUnknown, "no request %s was minted by this store (or it expired over %v ago and was swept): it may be mistyped, forged, or from another user's store", id, sweepAfter)
	}
	if err != nil {
		return Request{}, err
	}
	r, err := decodeRequest(d, id)
	if err != nil {
		return Request{}, refuse(ErrTampered, "%s: the stored request %v", id, err)
	}
	return r, nil
}

// answer returns id's answer, or nil when there is none yet.
func (s *Store) answer(id string) (*Answer, error) {
	d, err := s.read(id, kindAnswer, ".answer")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a, err := decodeAnswer(d)
	if err != nil {
		return nil, refuse(ErrTampered, "%s: the stored answer %v", id, err)
	}
	return &a, nil
}

// Create mints an ID for r, sets its Created and Expires (ttl from now:
// DefaultTTL when ttl is 0, at most MaxTTL) and stores it, pending. The
// caller fills in the rest from the command gate's decision; the argv and
// tool are stored byte for byte.
func (s *Store) Create(r Request, ttl time.Duration) (Request, error) {
	switch {
	case ttl == 0:
		ttl = DefaultTTL
	case ttl < 0 || ttl > MaxTTL:
		return Request{}, fmt.Errorf("approval: a request's life must be between 0 and %v, not %v", MaxTTL, ttl)
	}
	if err := checkRequest(r); err != nil {
		return Request{}, err
	}
	s.sweep()
	now := s.now().UTC()
	r.ID, r.Created, r.Expires = "apr-"+randomHex(16), now, now.Add(ttl)
	r.Argv = slices.Clone(r.Argv)
	if err := writeOnce(s.dir, r.ID+".request", seal(s.key, encodeRequest(r))); err != nil {
		return Request{}, fmt.Errorf("approval: storing request %s: %w", r.ID, err)
	}
	return r, nil
}

// checkRequest refuses a request that does not say what it binds, or that
// is larger than a record holds.
func checkRequest(r Request) error {
	for _, f := range []struct{ name, v string }{{"session", r.Session}, {"tool", r.Tool}, {"policy digest", r.PolicyDigest}} {
		if f.v == "" {
			return fmt.Errorf("approval: a request must name its %s: an approval is bound to it", f.name)
		}
	}
	if len(r.Argv) == 0 || len(r.Argv) > maxArgs {
		return fmt.Errorf("approval: a request's argv must have 1 to %d entries, not %d", maxArgs, len(r.Argv))
	}
	total := 0
	for _, a := range r.Argv {
		total += len(a)
	}
	if total > maxArgvBytes {
		return fmt.Errorf("approval: a request's argv has %d bytes, more than the %d a record holds", total, maxArgvBytes)
	}
	for _, f := range []string{r.Session, r.Tool, r.PolicyDigest, r.Rule, r.Reason, r.Justification} {
		if len(f) > maxString {
			return fmt.Errorf("approval: a field of the request has %d bytes, more than the %d a record holds", len(f), maxString)
		}
	}
	return nil
}

// Get returns the request id and its answer, nil while it is pending.
func (s *Store) Get(id string) (Request, *Answer, error) {
	r, err := s.request(id)
	if err != nil {
		return Request{}, nil, err
	}
	a, err := s.answer(id)
	return r, a, err
}

// Answer records a's answer to request id: once (a second answer is
// ErrAnswered, whoever gives it), and only before the request expires
// (ErrExpired). a.By must say who answered; a zero a.At is set to now.
func (s *Store) Answer(id string, a Answer) error {
	r, err := s.request(id)
	if err != nil {
		return err
	}
	switch {
	case a.By == "" || len(a.By) > maxAnswerBy:
		return fmt.Errorf("approval: an answer must say who gave it, in at most %d bytes", maxAnswerBy)
	case len(a.Reason) > maxAnswerText:
		return fmt.Errorf("approval: an answer's reason has %d bytes, more than %d", len(a.Reason), maxAnswerText)
	}
	now := s.now()
	if !now.Before(r.Expires) {
		return refuse(ErrExpired, "%s expired at %s, before it was answered: its command cannot run now; a new attempt makes a new request", id, r.Expires.Format(time.RFC3339))
	}
	if a.At.IsZero() {
		a.At = now
	}
	a.At = a.At.UTC()
	err = writeOnce(s.dir, id+".answer", seal(s.key, encodeAnswer(id, a)))
	if errors.Is(err, fs.ErrExist) {
		prev, perr := s.answer(id)
		if perr != nil {
			return perr
		}
		return refuse(ErrAnswered, "%s was already %s by %s at %s: an answer is given once", id, verb(prev.Allow), termtext.Clean(prev.By, 200), prev.At.Format(time.RFC3339))
	}
	if err != nil {
		return fmt.Errorf("approval: storing the answer to %s: %w", id, err)
	}
	return nil
}

func verb(allow bool) string {
	if allow {
		return "approved"
	}
	return "denied"
}

// Wait blocks until request id is answered (and returns the answer, an
// approval or a denial), expires (ErrExpired) or ctx is done. It polls,
// from every 10 ms up to every half second.
func (s *Store) Wait(ctx context.Context, id string) (Answer, error) {
	r, err := s.request(id)
	if err != nil {
		return Answer{}, err
	}
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		a, err := s.answer(id)
		if err != nil {
			return Answer{}, err
		}
		if a != nil {
			return *a, nil
		}
		left := r.Expires.Sub(s.now())
		if left <= 0 {
			return Answer{}, refuse(ErrExpired, "%s expired at %s with no answer: the command was not run", id, r.Expires.Format(time.RFC3339))
		}
		t := time.NewTimer(min(delay, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return Answer{}, fmt.Errorf("approval: waiting for an answer to %s: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}

// Redeem consumes the approval id for the command want describes, and
// returns the request and its answer. It is refused unless the request
// was minted by this store (ErrUnknown; an id of the wrong shape touches
// no file), its records are intact (ErrTampered), its Session, Tool, Argv
// and PolicyDigest equal want's exactly (ErrMismatch), it has not expired
// (ErrExpired), it was answered (ErrPending) with an approval
// (ErrDenied), and it was not redeemed before (ErrUsed). Of any number of
// concurrent redemptions, in any number of processes, one succeeds.
func (s *Store) Redeem(id string, want Request) (Request, Answer, error) {
	r, err := s.request(id)
	if err != nil {
		return Request{}, Answer{}, err
	}
	if err := mismatch(r, want); err != nil {
		return Request{}, Answer{}, err
	}
	now := s.now()
	if !now.Before(r.Expires) {
		return Request{}, Answer{}, refuse(ErrExpired, "%s expired at %s: its command cannot run now; a new attempt makes a new request", id, r.Expires.Format(time.RFC3339))
	}
	a, err := s.answer(id)
	switch {
	case err != nil:
		return Request{}, Answer{}, err
	case a == nil:
		return Request{}, Answer{}, refuse(ErrPending, "%s has not been answered yet: the operator approves it with: airlock approve %s", id, id)
	case !a.Allow:
		why := ""
		if a.Reason != "" {
			why = ": " + termtext.Clean(a.Reason, 400)
		}
		return Request{}, Answer{}, refuse(ErrDenied, "%s was denied by %s%s", id, termtext.Clean(a.By, 200), why)
	}
	err = writeOnce(s.dir, id+".used", seal(s.key, encodeUsed(id, now)))
	if errors.Is(err, fs.ErrExist) {
		return Request{}, Answer{}, refuse(ErrUsed, "%s was already used once (a replay): an approval runs its command once; run the command again to get a new request", id)
	}
	if err != nil {
		return Request{}, Answer{}, fmt.Errorf("approval: consuming %s: %w", id, err)
	}
	return r, *a, nil
}

// mismatch names the first bound field in which want differs from r.
func mismatch(r, want Request) error {
	for _, f := range []struct{ name, got, want string }{
		{"session", r.Session, want.Session},
		{"tool", r.Tool, want.Tool},
		{"policy", r.PolicyDigest, want.PolicyDigest},
	} {
		if f.got != f.want {
			return refuse(ErrMismatch, "%s was given for %s \"%s\", not \"%s\": an approval is bound to one %[2]s",
				r.ID, f.name, termtext.Clean(f.got, 100), termtext.Clean(f.want, 100))
		}
	}
	if !slices.Equal(r.Argv, want.Argv) {
		return refuse(ErrMismatch, "%s was given for another command (approved: %s; asked: %s): an approval is bound to its exact argv",
			r.ID, termtext.Clean(termtext.Argv(r.Argv), 200), termtext.Clean(termtext.Argv(want.Argv), 200))
	}
	return nil
}

// List returns the pending requests, oldest first: not answered and not
// expired. It first sweeps the files of requests that expired over an
// hour ago. Requests whose records cannot be trusted are left out and
// named in the error, which matches ErrTampered; the rest are returned
// with it.
func (s *Store) List() ([]Request, error) {
	s.sweep()
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	var out []Request
	var errs []error
	now := s.now()
	for _, id := range ids {
		r, a, err := s.Get(id)
		switch {
		case errors.Is(err, ErrUnknown): // swept meanwhile, or by another process
		case err != nil:
			errs = append(errs, err)
		case a == nil && now.Before(r.Expires):
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, errors.Join(errs...)
}

// ids lists the requests in the store.
func (s *Store) ids() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("approval: listing %s: %w", s.dir, err)
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".request"); ok && validID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// sweep removes, best effort, the files of requests that expired over
// sweepAfter ago (the request first, so that a half-swept one can never
// be redeemed), answers and redemptions left without their request, and
// temporary files left by a writer that died. Records that cannot be
// trusted are kept for whoever investigates.
func (s *Store) sweep() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	now := s.now()
	for _, e := range entries {
		name := e.Name()
		id, suffix, _ := strings.Cut(name, ".")
		switch {
		case strings.HasPrefix(name, ".tmp-"):
			if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > sweepAfter {
				os.Remove(filepath.Join(s.dir, name))
			}
		case !validID(id):
		case suffix == "request":
			if r, err := s.request(id); err == nil && now.Sub(r.Expires) > sweepAfter {
				for _, sfx := range []string{".request", ".answer", ".used"} {
					os.Remove(s.path(id, sfx))
				}
			}
		case suffix == "answer" || suffix == "used":
			if _, err := os.Lstat(s.path(id, ".request")); errors.Is(err, fs.ErrNotExist) {
				os.Remove(filepath.Join(s.dir, name))
			}
		}
	}
}
