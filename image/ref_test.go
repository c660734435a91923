package image

import (
	"errors"
	"strings"
	"testing"
)

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in, path, err string
	}{
		{in: "img@sha256:" + hex64, path: "img"},
		{in: "/a/b@c/oci@sha256:" + hex64, path: "/a/b@c/oci"},
		{in: "img", err: "missing digest"},
		{in: "img:latest", err: "missing digest"},
		{in: "@sha256:" + hex64, err: "empty path"},
		{in: "img@" + hex64, err: "digest has no algorithm"},
		{in: "img@sha512:" + hex64 + hex64, err: `unsupported digest algorithm "sha512"`},
		{in: "img@sha256:" + hex64[:63], err: "63 hex digits, want 64"},
		{in: "img@sha256:" + hex64 + "0", err: "65 hex digits, want 64"},
		{in: "img@sha256:" + strings.ToUpper(hex64), err: "lower-case hex"},
		{in: "img@sha256:" + hex64[:62] + "zz", err: "lower-case hex"},
	} {
		r, err := ParseRef(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrBadRef) {
				t.Errorf("ParseRef(%q) = %v, want error containing %q wrapping ErrBadRef", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRef(%q): %v", tc.in, err)
			continue
		}
		if r.Path != tc.path || r.Digest.Hex != hex64 || r.String() != tc.in {
			t.Errorf("ParseRef(%q) = %+v (%s)", tc.in, r, r)
		}
	}
}

func FuzzParseRef(f *testing.F) {
	f.Add("img@sha256:" + hex64)
	f.Add("a@b@sha256:" + hex64)
	f.Add("img@sha256:" + strings.ToUpper(hex64))
	f.Add("@")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		if r.String() != s || len(r.Digest.Hex) != 64 || r.Digest.Algorithm != "sha256" || r.Path == "" {
			t.Fatalf("ParseRef(%q) accepted %+v", s, r)
		}
	})
}
