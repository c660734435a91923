package approval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

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
		case errors.Is(err, ErrOutdated): // an older airlock's: never pending here
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
// be redeemed), an older airlock's requests written over MaxTTL and
// sweepAfter ago, answers and redemptions left without their request,
// and temporary files left by a writer that died. Records that cannot be
// trusted are kept for whoever investigates. It returns how many
// requests have not expired.
func (s *Store) sweep() (live int) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0
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
			r, err := s.request(id)
			switch {
			case errors.Is(err, ErrOutdated):
				// An older airlock's: expired once MaxTTL has passed since it was written.
				if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > MaxTTL+sweepAfter {
					s.remove(id)
				}
			case err != nil:
			case now.Before(r.Expires):
				live++
			case now.Sub(r.Expires) > sweepAfter:
				s.remove(id)
			}
		case suffix == "answer" || suffix == "used":
			if _, err := os.Lstat(s.path(id, ".request")); errors.Is(err, fs.ErrNotExist) {
				os.Remove(filepath.Join(s.dir, name))
			}
		}
	}
	return live
}

// remove removes the files of request id, the request first.
func (s *Store) remove(id string) {
	for _, sfx := range []string{".request", ".answer", ".used"} {
		os.Remove(s.path(id, sfx))
	}
}
