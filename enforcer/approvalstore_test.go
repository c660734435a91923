package enforcer_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/approval"
)

// memStore is a minimal in-memory approval store with the semantics
// package approval's Store promises (single use, expiry, exact binding),
// for these tests only.
type memStore struct {
	mu   sync.Mutex
	reqs map[string]*memEntry
}

type memEntry struct {
	r    approval.Request
	a    *approval.Answer
	used bool
}

func newMemStore() *memStore { return &memStore{reqs: map[string]*memEntry{}} }

func (s *memStore) Create(r approval.Request, ttl time.Duration) (approval.Request, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	r.ID, r.Created = "apr-"+hex.EncodeToString(b[:]), time.Now()
	r.Expires = r.Created.Add(ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs[r.ID] = &memEntry{r: r}
	return r, nil
}

func (s *memStore) Answer(id string, a approval.Answer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.reqs[id]
	switch {
	case e == nil:
		return approval.ErrUnknown
	case time.Now().After(e.r.Expires):
		return approval.ErrExpired
	case e.a != nil:
		return fmt.Errorf("already answered")
	}
	e.a = &a
	return nil
}

func (s *memStore) Redeem(id string, want approval.Request) (approval.Request, approval.Answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.reqs[id]
	switch {
	case e == nil:
		return want, approval.Answer{}, approval.ErrUnknown
	case time.Now().After(e.r.Expires):
		return e.r, approval.Answer{}, approval.ErrExpired
	case e.used:
		return e.r, approval.Answer{}, approval.ErrUsed
	case e.a == nil:
		return e.r, approval.Answer{}, approval.ErrPending
	case !e.a.Allow:
		return e.r, *e.a, approval.ErrDenied
	case e.r.Match(want) != nil:
		return e.r, approval.Answer{}, e.r.Match(want)
	}
	e.used = true
	return e.r, *e.a, nil
}

// only returns the one pending request, for a test that made one.
func (s *memStore) only() approval.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.reqs {
		return e.r
	}
	return approval.Request{}
}

// approverFunc answers every request with allow, recording what it saw.
type fakeApprover struct {
	mu    sync.Mutex
	allow bool
	seen  []approval.Request
	err   error
}

func (f *fakeApprover) Approve(_ context.Context, r approval.Request) (approval.Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, r)
	if f.err != nil {
		return approval.Answer{}, f.err
	}
	return approval.Answer{Allow: f.allow, By: "test approver", Reason: "checked by the test"}, nil
}

// approvalAllow is an operator's approval.
func approvalAllow() approval.Answer {
	return approval.Answer{Allow: true, By: "operator via airlock approve", At: time.Now()}
}
