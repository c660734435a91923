package approval

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// FuzzRecord feeds arbitrary bytes to the record decoder, sealed with the
// right key (so the decoder itself is reached): it must never panic, and
// a record it accepts must encode back to the same bytes (the encoding is
// canonical). It also round-trips the fuzzed strings through a request.
func FuzzRecord(f *testing.F) {
	key := make([]byte, keySize)
	good := encodeRequest(Request{ID: "apr-00000000000000000000000000000000", Session: "s", Tool: "t",
		Argv: []string{"a", "\xff"}, Program: "/bin/a", ProgramDigest: "sha256:00", Env: []string{"A=1"}, Cwd: "/workspace",
		Stdin: "sha256:01", StdinBytes: 300, Task: "t", PolicyDigest: "d", Created: time.Unix(1, 0), Expires: time.Unix(2, 0)})
	f.Add(good, "argv", "\x00tool")
	f.Add(good[:len(good)-3], "", "")
	f.Add(append(append(good[:len(magic)+1:len(magic)+1], 0xa4, 0x00), good[len(magic)+2:]...), "", "") // a length not in its shortest form
	f.Add(encodeAnswer("apr-00000000000000000000000000000000", Answer{Allow: true, By: "x"}), "a\u202e", "")
	f.Fuzz(func(t *testing.T, body []byte, s1, s2 string) {
		const id = "apr-00000000000000000000000000000000"
		if d, err := unseal(key, seal(key, body), kindRequest, id); err == nil {
			if r, err := decodeRequest(d, id); err == nil && !slices.Equal(encodeRequest(r), body) {
				t.Fatalf("accepted a non-canonical request record: %q", body)
			}
		}
		if d, err := unseal(key, seal(key, body), kindAnswer, id); err == nil {
			if a, err := decodeAnswer(d); err == nil && !slices.Equal(encodeAnswer(id, a), body) {
				t.Fatalf("accepted a non-canonical answer record: %q", body)
			}
		}
		if _, err := unseal(key, body, kindRequest, id); err == nil && len(body) < len(magic)+32 {
			t.Fatalf("a record shorter than its seal was accepted: %q", body)
		}
		r := Request{ID: id, Session: s1, Tool: s2, Argv: []string{s1, s2, ""}, Program: s1, ProgramDigest: s2, Env: []string{s2, s1},
			Cwd: s1, Stdin: s2, StdinBytes: -int64(len(s1)), Task: s1, Workspace: s2, Image: s1, PolicyDigest: s2,
			Created: time.Unix(0, int64(len(s1))).UTC(), Expires: time.Unix(0, -int64(len(s2))).UTC()}
		d, err := unseal(key, seal(key, encodeRequest(r)), kindRequest, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRequest(d, id)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip of %q, %q: %+v, %v", s1, s2, got, err)
		}
	})
}

// FuzzBound: whatever the agent put in a request, every field a person is
// shown is one line with nothing a terminal interprets, and a request
// matches itself and no request with another environment or working
// directory, however alike they print.
func FuzzBound(f *testing.F) {
	f.Add("PATH=/tmp:/usr/bin", "/workspace", "A=\x1b[2J")
	f.Add("A=1 B=2", "/tmp\n/x", "")
	f.Add("\xff", "\u202e", "\\xff")
	f.Fuzz(func(t *testing.T, env, cwd, other string) {
		r := sample()
		r.Env, r.Cwd, r.Workspace = []string{env, other}, cwd, other
		for _, fl := range r.Bound() {
			if strings.ContainsFunc(fl.Value, func(c rune) bool { return unicode.IsControl(c) || !unicode.IsPrint(c) && c != ' ' }) ||
				!utf8.ValidString(fl.Value) {
				t.Fatalf("%s shown as %q", fl.Name, fl.Value)
			}
		}
		if err := r.Match(r); err != nil {
			t.Fatalf("a request does not match itself: %v", err)
		}
		for _, w := range []Request{{Env: []string{env + other}}, {Env: []string{env, other, ""}}, {Cwd: cwd + "/"}} {
			want := r
			if w.Env != nil {
				want.Env = w.Env
			} else {
				want.Cwd = w.Cwd
			}
			if err := r.Match(want); !errors.Is(err, ErrMismatch) {
				t.Fatalf("%q matched %q: %v", r.Env, want.Env, err)
			}
		}
	})
}
