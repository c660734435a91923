package approval

import (
	"slices"
	"testing"
	"time"
)

// FuzzRecord feeds arbitrary bytes to the record decoder, sealed with the
// right key (so the decoder itself is reached): it must never panic, and
// a record it accepts must encode back to the same bytes (the encoding is
// canonical). It also round-trips the fuzzed strings through a request.
func FuzzRecord(f *testing.F) {
	key := make([]byte, keySize)
	good := encodeRequest(Request{ID: "apr-00000000000000000000000000000000", Session: "s", Tool: "t",
		Argv: []string{"a", "\xff"}, PolicyDigest: "d", Created: time.Unix(1, 0), Expires: time.Unix(2, 0)})
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
		r := Request{ID: id, Session: s1, Tool: s2, Argv: []string{s1, s2, ""}, PolicyDigest: s2,
			Created: time.Unix(0, int64(len(s1))).UTC(), Expires: time.Unix(0, -int64(len(s2))).UTC()}
		d, err := unseal(key, seal(key, encodeRequest(r)), kindRequest, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRequest(d, id)
		if err != nil || got.Session != s1 || got.Tool != s2 || !slices.Equal(got.Argv, r.Argv) || !got.Created.Equal(r.Created) || !got.Expires.Equal(r.Expires) {
			t.Fatalf("round trip of %q, %q: %+v, %v", s1, s2, got, err)
		}
	})
}
