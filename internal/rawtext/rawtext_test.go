package rawtext

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestRoundTrip: every string, valid UTF-8 or not, comes back byte for
// byte, and a valid one is written exactly as encoding/json writes it.
func TestRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", "\xff", "a\xfeb", "\ufffd", "<&>\"\\\n\u2028", "\xed\xa0\x80", `{"base64":"/w=="}`} {
		b, err := json.Marshal(String(s))
		if err != nil {
			t.Fatal(err)
		}
		var got String
		if err := json.Unmarshal(b, &got); err != nil || string(got) != s {
			t.Errorf("%q: %s decodes to %q, %v", s, b, got, err)
		}
		if want, _ := json.Marshal(s); string(want) != string(b) && s != "\xff" && s != "a\xfeb" && s != "\xed\xa0\x80" {
			t.Errorf("%q: written %s, encoding/json writes %s", s, b, want)
		}
	}
	if b, _ := json.Marshal(String("\xff")); string(b) != `{"base64":"/w=="}` {
		t.Errorf(`"\xff" written %s`, b)
	}
}

// TestDistinct: two names that JSON alone would collapse into one stay two.
func TestDistinct(t *testing.T) {
	a, _ := json.Marshal(String("a\xff"))
	b, _ := json.Marshal(String("a\xfe"))
	c, _ := json.Marshal(String("a\ufffd"))
	if string(a) == string(b) || string(a) == string(c) {
		t.Fatalf("collapsed: %s %s %s", a, b, c)
	}
}

// TestStrings: lists round-trip, nil stays nil (null), empty stays empty.
func TestStrings(t *testing.T) {
	for _, l := range []Strings{nil, {}, {"a", "\xff", ""}} {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var got Strings
		if err := json.Unmarshal(b, &got); err != nil || !slices.Equal(got, l) || (got == nil) != (l == nil) {
			t.Errorf("%q: %s decodes to %q, %v", l, b, got, err)
		}
	}
}

// TestRefused: anything but the two forms is an error, never a string.
func TestRefused(t *testing.T) {
	for _, in := range []string{`1`, `{}`, `{"base64":1}`, `{"base64":"!"}`, `{"base64":"/w"}`, `[]`, `true`} {
		var s String
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%s decoded to %q", in, s)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("a\xffb"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := json.Marshal(Strings{string(raw), string(raw) + "x"})
		if err != nil {
			t.Fatal(err)
		}
		var got Strings
		if err := json.Unmarshal(b, &got); err != nil || len(got) != 2 || got[0] != string(raw) || got[1] != string(raw)+"x" {
			t.Fatalf("%q: %s decodes to %q, %v", raw, b, got, err)
		}
	})
}
