package approval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/airlock-sandbox/airlock/internal/privstate"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

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
	if live := s.sweep(); live >= s.maxLive {
		return Request{}, fmt.Errorf("approval: the store already holds %d requests that have not expired, its most: answer them (airlock approve --list) or let them expire; an agent that escalates without end is refused", live)
	}
	now := s.now().UTC()
	r.ID, r.Created, r.Expires = "apr-"+randomHex(16), now, now.Add(ttl)
	r.Argv, r.Env = slices.Clone(r.Argv), append([]string{}, r.Env...)
	if err := privstate.WriteOnce(s.dir, r.ID+".request", seal(s.key, encodeRequest(r))); err != nil {
		return Request{}, fmt.Errorf("approval: storing request %s: %w", r.ID, err)
	}
	return r, nil
}

// checkRequest refuses a request that does not say what it binds, or that
// is larger than a record holds.
func checkRequest(r Request) error {
	for _, f := range []struct{ name, v string }{{"session", r.Session}, {"tool", r.Tool}, {"policy digest", r.PolicyDigest},
		{"program", r.Program}, {"program digest", r.ProgramDigest}, {"working directory", r.Cwd}, {"stdin", r.Stdin}, {"egress task", r.Task}} {
		if f.v == "" {
			return fmt.Errorf("approval: a request must name its %s: an approval is bound to it", f.name)
		}
	}
	if (r.Stdin == StdinNone) != (r.StdinBytes == 0) || r.StdinBytes < 0 {
		return fmt.Errorf("approval: a request's stdin is %s, or it has bytes, not both", StdinNone)
	}
	if len(r.Argv) == 0 || len(r.Argv) > maxArgs || len(r.Env) > maxArgs {
		return fmt.Errorf("approval: a request's argv must have 1 to %d entries and its environment at most as many, not %d and %d", maxArgs, len(r.Argv), len(r.Env))
	}
	total := 0
	for _, list := range [][]string{r.Argv, r.Env} {
		for _, a := range list {
			total += len(a)
		}
	}
	if total > maxArgvBytes {
		return fmt.Errorf("approval: a request's argv and environment have %d bytes, more than the %d a record holds", total, maxArgvBytes)
	}
	for _, f := range []string{r.Session, r.Tool, r.PolicyDigest, r.Rule, r.Reason, r.Justification,
		r.Program, r.ProgramDigest, r.Cwd, r.Stdin, r.Task, r.Workspace, r.Image} {
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
	err = privstate.WriteOnce(s.dir, id+".answer", seal(s.key, encodeAnswer(id, a)))
	if errors.Is(err, fs.ErrExist) {
		prev, perr := s.answer(id)
		if perr != nil {
			return perr
		}
		return refuse(ErrAnswered, "%s was already %s by %s at %s: an answer is given once", id, verb(prev.Allow), termtext.Clip(prev.By, 200), prev.At.Format(time.RFC3339))
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
// no file), its records are intact (ErrTampered) and of this airlock's
// format (ErrOutdated), every field it is bound to equals want's exactly
// (ErrMismatch, Request.Match), it has not expired
// (ErrExpired), it was answered (ErrPending) with an approval
// (ErrDenied), and it was not redeemed before (ErrUsed). Of any number of
// concurrent redemptions, in any number of processes, one succeeds.
func (s *Store) Redeem(id string, want Request) (Request, Answer, error) {
	r, err := s.request(id)
	if err != nil {
		return Request{}, Answer{}, err
	}
	if err := r.Match(want); err != nil {
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
			why = ": " + termtext.Clip(a.Reason, 400)
		}
		return Request{}, Answer{}, refuse(ErrDenied, "%s was denied by %s%s", id, termtext.Clip(a.By, 200), why)
	}
	err = privstate.WriteOnce(s.dir, id+".used", seal(s.key, encodeUsed(id, now)))
	if errors.Is(err, fs.ErrExist) {
		return Request{}, Answer{}, refuse(ErrUsed, "%s was already used once (a replay): an approval runs its command once; run the command again to get a new request", id)
	}
	if err != nil {
		return Request{}, Answer{}, fmt.Errorf("approval: consuming %s: %w", id, err)
	}
	return r, *a, nil
}
