package approval

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/privstate"
)

// clock is a settable clock for a Store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// privateDir is a fresh directory of the test's, 0700 (t.TempDir's are 0755).
func privateDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newStore(t *testing.T) (*Store, *clock) {
	t.Helper()
	s, err := OpenStore(privateDir(t))
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	s.now = c.now
	return s, c
}

// sample is an escalated request as the sessions code would make it.
func sample() Request {
	return Request{Session: "ses-1", Tool: "vcs", Argv: []string{"/usr/bin/git", "push", "origin", "main"},
		Program: "/usr/bin/git", ProgramDigest: "sha256:0123", Env: []string{"GIT_TRACE=0"}, Cwd: "/workspace", Stdin: StdinNone, Task: "vcs",
		PolicyDigest: "sha256:abc", Rule: "git-push", Reason: `"/usr/bin/git" matched escalate rule "git-push" of tool "vcs": needs human approval`}
}

func mustCreate(t *testing.T, s *Store, r Request) Request {
	t.Helper()
	r, err := s.Create(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func approve(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := s.Answer(id, Answer{Allow: true, By: "test"}); err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, reason error, text string) {
	t.Helper()
	if !errors.Is(err, reason) || !strings.Contains(err.Error(), text) {
		t.Fatalf("got %v, want %v saying %q", err, reason, text)
	}
}

func TestLifecycle(t *testing.T) {
	s, c := newStore(t)
	r := mustCreate(t, s, sample())
	if !validID(r.ID) || !r.Created.Equal(c.now()) || !r.Expires.Equal(c.now().Add(DefaultTTL)) {
		t.Fatalf("minted %+v", r)
	}
	got, a, err := s.Get(r.ID)
	if err != nil || a != nil || !slices.Equal(got.Argv, r.Argv) || got.Reason != r.Reason || !got.Expires.Equal(r.Expires) {
		t.Fatalf("Get = %+v, %v, %v", got, a, err)
	}
	if list, err := s.List(); err != nil || len(list) != 1 || list[0].ID != r.ID {
		t.Fatalf("List = %v, %v", list, err)
	}
	_, _, err = s.Redeem(r.ID, sample())
	wantErr(t, err, ErrPending, "airlock approve "+r.ID)

	c.advance(time.Minute)
	if err := s.Answer(r.ID, Answer{Allow: true, By: "operator uid 0 via airlock approve", Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Fatalf("an answered request is still listed: %v, %v", list, err)
	}
	gotR, gotA, err := s.Redeem(r.ID, sample())
	if err != nil || gotR.ID != r.ID || !gotA.Allow || gotA.By != "operator uid 0 via airlock approve" || !gotA.At.Equal(c.now()) {
		t.Fatalf("Redeem = %+v, %+v, %v", gotR, gotA, err)
	}
	_, _, err = s.Redeem(r.ID, sample())
	wantErr(t, err, ErrUsed, "a replay")
}

func TestCreateRefuses(t *testing.T) {
	s, _ := newStore(t)
	for name, c := range map[string]struct {
		edit func(*Request)
		ttl  time.Duration
		want string
	}{
		"no session":  {func(r *Request) { r.Session = "" }, 0, "must name its session"},
		"no tool":     {func(r *Request) { r.Tool = "" }, 0, "must name its tool"},
		"no digest":   {func(r *Request) { r.PolicyDigest = "" }, 0, "must name its policy digest"},
		"no program":  {func(r *Request) { r.Program = "" }, 0, "must name its program"},
		"no prog sum": {func(r *Request) { r.ProgramDigest = "" }, 0, "must name its program digest"},
		"no cwd":      {func(r *Request) { r.Cwd = "" }, 0, "must name its working directory"},
		"no stdin":    {func(r *Request) { r.Stdin = "" }, 0, "must name its stdin"},
		"stdin bytes": {func(r *Request) { r.StdinBytes = 3 }, 0, "or it has bytes"},
		"no task":     {func(r *Request) { r.Task = "" }, 0, "must name its egress task"},
		"no argv":     {func(r *Request) { r.Argv = nil }, 0, "must have 1 to"},
		"huge argv":   {func(r *Request) { r.Argv = []string{strings.Repeat("x", maxArgvBytes+1)} }, 0, "more than the"},
		"huge env":    {func(r *Request) { r.Env = []string{strings.Repeat("x", maxArgvBytes-20)} }, 0, "argv and environment have"},
		"huge cwd":    {func(r *Request) { r.Cwd = strings.Repeat("x", maxString+1) }, 0, "more than the"},
		"huge reason": {func(r *Request) { r.Reason = strings.Repeat("x", maxString+1) }, 0, "more than the"},
		"ttl < 0":     {func(*Request) {}, -time.Second, "must be between 0 and 24h0m0s"},
		"ttl > max":   {func(*Request) {}, MaxTTL + time.Second, "must be between 0 and 24h0m0s"},
	} {
		r := sample()
		c.edit(&r)
		if _, err := s.Create(r, c.ttl); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
	if files, _ := os.ReadDir(s.dir); len(files) != 1 {
		t.Errorf("a refused request left files: %v", files)
	}
	r, err := s.Create(sample(), MaxTTL)
	if err != nil || r.Expires.Sub(r.Created) != MaxTTL {
		t.Errorf("ttl at the maximum: %+v, %v", r, err)
	}
}

// TestForgedID: an id airlock did not mint is unknown, and an id of the
// wrong shape is refused before any file is opened, even one that would
// resolve to a real record.
// TestCreateBounded: an agent that escalates in a loop fills the store
// only up to its bound; expired requests make room again.
func TestCreateBounded(t *testing.T) {
	s, c := newStore(t)
	s.maxLive = 5
	for range 5 {
		mustCreate(t, s, sample())
	}
	if _, err := s.Create(sample(), 0); err == nil || !strings.Contains(err.Error(), "already holds 5 requests that have not expired") {
		t.Fatalf("a sixth request: %v", err)
	}
	c.advance(DefaultTTL)
	mustCreate(t, s, sample())
}

func TestForgedID(t *testing.T) {
	s, _ := newStore(t)
	r := mustCreate(t, s, sample())
	approve(t, s, r.ID)
	hex := strings.TrimPrefix(r.ID, "apr-")
	for _, id := range []string{"", "apr-", "apr-" + hex[:31], "apr-" + strings.ToUpper(hex), r.ID + "0",
		r.ID + "/../" + r.ID, "../" + r.ID, "apr-../../../../etc/passwd", " " + r.ID, r.ID + "\n"} {
		_, _, err := s.Redeem(id, sample())
		wantErr(t, err, ErrUnknown, "is not an approval id")
		if err := s.Answer(id, Answer{Allow: true, By: "x"}); !errors.Is(err, ErrUnknown) {
			t.Errorf("Answer(%q) = %v", id, err)
		}
		if _, _, err := s.Get(id); !errors.Is(err, ErrUnknown) {
			t.Errorf("Get(%q) = %v", id, err)
		}
	}
	_, _, err := s.Redeem("apr-"+strings.Repeat("0", 32), sample())
	wantErr(t, err, ErrUnknown, "no request apr-00000000000000000000000000000000 was minted by this store")
	if _, _, err := s.Redeem(r.ID, sample()); err != nil {
		t.Fatalf("the genuine id after the forgeries: %v", err)
	}
}

func TestExpiry(t *testing.T) {
	s, c := newStore(t)
	late := mustCreate(t, s, sample())
	unused := mustCreate(t, s, sample())
	approve(t, s, unused.ID)
	c.advance(DefaultTTL)
	wantErr(t, s.Answer(late.ID, Answer{Allow: true, By: "x"}), ErrExpired, "expired at 2026-12-01T10:15:00Z, before it was answered")
	_, _, err := s.Redeem(unused.ID, sample())
	wantErr(t, err, ErrExpired, "expired at")
	_, err = s.Wait(context.Background(), late.ID)
	wantErr(t, err, ErrExpired, "with no answer")
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Fatalf("expired requests listed: %v, %v", list, err)
	}
	if files, _ := filepath.Glob(filepath.Join(s.dir, "apr-*")); len(files) != 3 {
		t.Fatalf("swept too early: %v", files)
	}
	c.advance(sweepAfter + time.Second)
	if _, err := s.List(); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(s.dir, "apr-*")); len(files) != 0 {
		t.Fatalf("not swept: %v", files)
	}
	_, _, err = s.Redeem(unused.ID, sample())
	wantErr(t, err, ErrUnknown, "swept")
}

func TestDeniedAndAnsweredOnce(t *testing.T) {
	s, _ := newStore(t)
	r := mustCreate(t, s, sample())
	if err := s.Answer(r.ID, Answer{By: "operator uid 0 via airlock approve", Reason: "not on a Friday\x1b[2J"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Redeem(r.ID, sample())
	wantErr(t, err, ErrDenied, `denied by operator uid 0 via airlock approve: not on a Friday\x1b[2J`)
	wantErr(t, s.Answer(r.ID, Answer{Allow: true, By: "someone else"}), ErrAnswered, "was already denied by operator uid 0")
	_, a, _ := s.Get(r.ID)
	if a == nil || a.Allow || a.Reason != "not on a Friday\x1b[2J" {
		t.Fatalf("the first answer was changed: %+v", a)
	}
	if err := s.Answer(r.ID, Answer{Allow: true}); err == nil || !strings.Contains(err.Error(), "must say who gave it") {
		t.Fatalf("an answer without By: %v", err)
	}
}

// TestMismatch alters each bound field in turn: every one is refused, with
// a reason that names the field, and a refusal does not consume the
// approval.
func TestMismatch(t *testing.T) {
	s, _ := newStore(t)
	r := sample()
	r.Argv = append(r.Argv, "\xff", "")
	r.Env = []string{"A=1", "A=2"}
	r = mustCreate(t, s, r)
	approve(t, s, r.ID)
	const hashed = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	for _, c := range []struct {
		name, says string
		edit       func(*Request)
	}{
		{"session", `session "ses-1", not "ses-2"`, func(w *Request) { w.Session = "ses-2" }},
		{"tool", `tool "vcs", not "run_tests"`, func(w *Request) { w.Tool = "run_tests" }},
		{"policy", `policy "sha256:abc", not "sha256:abd"`, func(w *Request) { w.PolicyDigest = "sha256:abd" }},
		{"argument", "another command", func(w *Request) { w.Argv[2] = "evil" }},
		{"extra arg", "another command", func(w *Request) { w.Argv = append(w.Argv, "--force") }},
		{"fewer args", "another command", func(w *Request) { w.Argv = w.Argv[:len(w.Argv)-1] }},
		{"command", "another command", func(w *Request) { w.Argv[0] = "git" }},
		{"invalid UTF-8", "another command", func(w *Request) { w.Argv[4] = "\ufffd" }},
		{"empty vs none", "another command", func(w *Request) { w.Argv = append(w.Argv[:5:5], w.Argv[6:]...) }},
		{"program path", `program "/usr/bin/git (sha256:0123)", not "/tmp/git (sha256:0123)"`, func(w *Request) { w.Program = "/tmp/git" }},
		{"program contents", `program "/usr/bin/git (sha256:0123)", not "/usr/bin/git (sha256:4567)"`, func(w *Request) { w.ProgramDigest = "sha256:4567" }},
		{"env PATH", `environment "'A=1' 'A=2'", not "'A=1' 'A=2' 'PATH=/tmp:/usr/bin'"`, func(w *Request) { w.Env = append(w.Env, "PATH=/tmp:/usr/bin") }},
		{"env order", `environment "'A=1' 'A=2'", not "'A=2' 'A=1'"`, func(w *Request) { w.Env = []string{"A=2", "A=1"} }},
		{"env none", `environment "'A=1' 'A=2'", not "(none)"`, func(w *Request) { w.Env = nil }},
		{"cwd", `working directory "/workspace", not "/tmp"`, func(w *Request) { w.Cwd = "/tmp" }},
		{"stdin", `stdin "none", not "` + hashed + ` (4 bytes)"`, func(w *Request) { w.Stdin, w.StdinBytes = hashed, 4 }},
		{"task", `egress task "vcs", not "deploy"`, func(w *Request) { w.Task = "deploy" }},
		{"workspace", `workspace "(none)", not "/tmp/evil"`, func(w *Request) { w.Workspace = "/tmp/evil" }},
		{"image", `image "(none)", not "/tmp/i@sha256:00"`, func(w *Request) { w.Image = "/tmp/i@sha256:00" }},
	} {
		want := r
		want.Argv, want.Env = slices.Clone(r.Argv), slices.Clone(r.Env)
		c.edit(&want)
		_, _, err := s.Redeem(r.ID, want)
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "was given for "+c.says) {
			t.Errorf("%s: got %v, want ErrMismatch saying %q", c.name, err, c.says)
		}
	}
	got, _, err := s.Redeem(r.ID, r)
	if err != nil || !slices.Equal(got.Argv, r.Argv) || !slices.Equal(got.Env, r.Env) {
		t.Fatalf("the exact request after the altered ones: %+v, %v", got, err)
	}
}

// TestTampered alters the records on disk in every way a writer other
// than the store could.
func TestTampered(t *testing.T) {
	s, _ := newStore(t)
	other, _ := newStore(t)
	for name, tamper := range map[string]func(id, otherID string){
		"flipped byte": func(id, _ string) {
			p := s.path(id, ".request")
			b, _ := os.ReadFile(p)
			b[len(magic)+40] ^= 1
			os.WriteFile(p, b, 0o600)
		},
		"truncated": func(id, _ string) { os.Truncate(s.path(id, ".request"), 10) },
		"request renamed from another id": func(id, otherID string) {
			os.Rename(s.path(otherID, ".request"), s.path(id, ".request"))
		},
		"answer from another store": func(id, _ string) {
			o := mustCreate(t, other, sample())
			approve(t, other, o.ID)
			b, _ := os.ReadFile(other.path(o.ID, ".answer"))
			os.WriteFile(s.path(id, ".answer"), b, 0o600)
		},
		"forged answer": func(id, _ string) {
			os.WriteFile(s.path(id, ".answer"), seal(make([]byte, keySize), encodeAnswer(id, Answer{Allow: true, By: "me"})), 0o600)
		},
		"answer of another request": func(id, otherID string) {
			approve(t, s, otherID)
			os.Link(s.path(otherID, ".answer"), s.path(id, ".answer"))
		},
		"symbolic link": func(id, otherID string) {
			os.Remove(s.path(id, ".request"))
			os.Symlink(s.path(otherID, ".request"), s.path(id, ".request"))
		},
		"group readable": func(id, _ string) { os.Chmod(s.path(id, ".request"), 0o640) },
	} {
		r := mustCreate(t, s, sample())
		o := mustCreate(t, s, sample())
		tamper(r.ID, o.ID)
		_, _, err := s.Redeem(r.ID, sample())
		if !errors.Is(err, ErrTampered) {
			t.Errorf("%s: Redeem = %v, want ErrTampered", name, err)
			continue
		}
		if _, err := s.List(); !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), r.ID) {
			t.Errorf("%s: List does not name the altered record: %v", name, err)
		}
		os.Remove(s.path(r.ID, ".request"))
		os.Remove(s.path(r.ID, ".answer"))
	}
}

// TestLossless: an argv, an environment and paths that are not text are
// stored and returned byte for byte, with every other bound field.
func TestLossless(t *testing.T) {
	s, _ := newStore(t)
	r := sample()
	r.Argv = []string{"printf", "\xff\xfe", "\x1b]0;owned\x07", "", "a\u202eb", strings.Repeat("y", 100<<10)}
	r.Tool = "t\x00ol"
	r.Env = []string{"PATH=/tmp:\xff", "", "A=\x1b[2J"}
	r.Cwd, r.Workspace, r.Image = "/workspace/\xfe", "/home/u/\u202eproj", "/img@sha256:00"
	r.Stdin, r.StdinBytes = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 1<<20
	r = mustCreate(t, s, r)
	got, _, err := s.Get(r.ID)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("Get = %+v, %v\nwant  %+v", got, err, r)
	}
}

// TestOutdatedRecord: a request sealed in the format of the airlock
// before requests bound the program, environment, working directory and
// stdin is refused as an older airlock's — never answered, redeemed, or
// listed as pending — and swept once any such request has expired.
func TestOutdatedRecord(t *testing.T) {
	s, c := newStore(t)
	id := "apr-" + strings.Repeat("ab", 16)
	e := &encoder{b: append([]byte(magicV1), kindRequest)} // format 1: id, session, tool, argv, policy, rule, reason, justification, created, expires
	for _, f := range []string{id, "ses-1", "vcs"} {
		e.str(f)
	}
	e.strs([]string{"/usr/bin/git", "push"})
	for _, f := range []string{"sha256:abc", "git-push", "needs approval", ""} {
		e.str(f)
	}
	e.time(c.now())
	e.time(c.now().Add(DefaultTTL))
	p := s.path(id, ".request")
	if err := privstate.WriteOnce(s.dir, id+".request", seal(s.key, e.b)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, time.Time{}, c.now()); err != nil { // written now, by the store's clock
		t.Fatal(err)
	}
	_, _, err := s.Get(id)
	wantErr(t, err, ErrOutdated, "was made by an older airlock")
	wantErr(t, s.Answer(id, Answer{Allow: true, By: "operator"}), ErrOutdated, "ask for the command again")
	old := sample()
	old.Argv = []string{"/usr/bin/git", "push"}
	_, _, err = s.Redeem(id, old)
	wantErr(t, err, ErrOutdated, "not the program, environment, working directory or stdin")
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("an outdated request was swept before it expired: %v", err)
	}
	if err := os.Chtimes(p, time.Time{}, c.now().Add(-MaxTTL-sweepAfter-time.Minute)); err != nil {
		t.Fatal(err)
	}
	s.List()
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an outdated request was kept after any could have expired: %v", err)
	}
}

func TestConcurrentRedeem(t *testing.T) {
	s, _ := newStore(t)
	for range 5 {
		r := mustCreate(t, s, sample())
		approve(t, s, r.ID)
		var wins, replays atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 64 {
			wg.Go(func() {
				<-start
				_, _, err := s.Redeem(r.ID, sample())
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, ErrUsed):
					replays.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || replays.Load() != 63 {
			t.Fatalf("%d redemptions succeeded and %d were replays, want 1 and 63", wins.Load(), replays.Load())
		}
	}
}

func TestConcurrentAnswer(t *testing.T) {
	s, _ := newStore(t)
	r := mustCreate(t, s, sample())
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			err := s.Answer(r.ID, Answer{Allow: i%2 == 0, By: "racer"})
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, ErrAnswered) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d answers were recorded, want 1", wins.Load())
	}
}

func TestWait(t *testing.T) {
	s, _ := newStore(t)
	r := mustCreate(t, s, sample())
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.Answer(r.ID, Answer{Allow: true, By: "later"})
	}()
	a, err := s.Wait(context.Background(), r.ID)
	if err != nil || !a.Allow || a.By != "later" {
		t.Fatalf("Wait = %+v, %v", a, err)
	}
	r = mustCreate(t, s, sample())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := s.Wait(ctx, r.ID); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for an answer to "+r.ID) {
		t.Fatalf("Wait with an ended context = %v", err)
	}
}

func TestOpenStoreRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir); err == nil || !strings.Contains(err.Error(), "open to group or others (mode 755)") {
		t.Errorf("a 0755 store: %v", err)
	}
	os.Chmod(dir, 0o700)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(dir, link)
	if _, err := OpenStore(link); err == nil || !strings.Contains(err.Error(), "is a symbolic link or not a directory") {
		t.Errorf("a store through a link: %v", err)
	}
	os.WriteFile(filepath.Join(dir, keyName), []byte("short"), 0o600)
	if _, err := OpenStore(dir); err == nil || !strings.Contains(err.Error(), "has 5 bytes, not 32") {
		t.Errorf("a short key: %v", err)
	}
}

// TestKeyCreatedOnce: stores opened at once on a fresh directory agree on
// its key, which is private.
func TestKeyCreatedOnce(t *testing.T) {
	dir := privateDir(t)
	stores := make([]*Store, 16)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := OpenStore(dir)
			if err != nil {
				t.Error(err)
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s == nil || string(s.key) != string(stores[0].key) {
			t.Fatal("stores on one directory have different keys")
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, keyName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key: %v, %v", fi, err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(files) != 0 {
		t.Fatalf("temporary files left: %v", files)
	}
}
