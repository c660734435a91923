package changes

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestManifestBytesExact: a path that is not valid UTF-8 reaches the
// manifest's JSON as its bytes ({"base64":"…"}), not as U+FFFD, which
// named another path (and every such path the same); a UTF-8 path stays
// a plain string, as docs/changes.md shows.
func TestManifestBytesExact(t *testing.T) {
	for _, c := range []struct {
		f    FileChange
		want string
	}{
		{FileChange{Path: "bad\xff.txt", OldPath: "old\xfe", Kind: Renamed, Omitted: "not compared: bad\xff.txt"},
			`{"path":{"base64":"YmFk/y50eHQ="},"oldPath":{"base64":"b2xk/g=="},"kind":"renamed","oldSize":0,"newSize":0,"omitted":{"base64":"bm90IGNvbXBhcmVkOiBiYWT/LnR4dA=="}}`},
		{FileChange{Path: "dir/é <x>.go", Kind: Added, NewMode: 0o100644, NewSize: 3},
			`{"path":"dir/é \u003cx\u003e.go","kind":"added","newMode":"100644","oldSize":0,"newSize":3}`},
	} {
		b, err := json.Marshal(c.f)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%q: got %s, want %s", c.f.Path, b, c.want)
		}
		var back FileChange
		if err := json.Unmarshal(b, &back); err != nil || back != c.f {
			t.Errorf("%q: read back %+v, %v", c.f.Path, back, err)
		}
	}
	b, _ := json.Marshal(Patch{Files: []FileChange{{Path: "a\xff"}, {Path: "a\xfe"}}})
	if strings.Contains(string(b), "\ufffd") || !strings.Contains(string(b), "base64") {
		t.Errorf("the manifest %s names the two paths alike", b)
	}
}

func FuzzManifestJSON(f *testing.F) {
	f.Add("a\xff", "", "why")
	f.Add("dir/file.go", "old.go", "")
	f.Fuzz(func(t *testing.T, path, old, omitted string) {
		in := FileChange{Path: path, OldPath: old, Kind: Modified, Omitted: omitted}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out FileChange
		if err := json.Unmarshal(b, &out); err != nil || out != in {
			t.Fatalf("%q: round trip %+v, %v", b, out, err)
		}
	})
}

// TestOmissionExclusionBytesExact: an omission's and an exclusion's
// paths reach the manifest byte for byte, and read back as they were.
func TestOmissionExclusionBytesExact(t *testing.T) {
	o := Omission{Class: OmitLarge, Count: 2, First: "big\xff"}
	b, err := json.Marshal(o)
	if want := `{"class":"large","count":2,"first":{"base64":"Ymln/w=="}}`; err != nil || string(b) != want {
		t.Errorf("omission: got %s, %v; want %s", b, err, want)
	}
	var o2 Omission
	if err := json.Unmarshal(b, &o2); err != nil || o2 != o {
		t.Errorf("omission: read back %+v, %v", o2, err)
	}
	for _, e := range []Exclusion{
		{Class: ExcludePolicy, Paths: 3, Dirs: 1, First: []string{"a\xfe", "b <c>"}, Unused: "why"},
		{Class: ExcludeGitignore},
	} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"class":"gitignore","paths":0,"dirs":0}`
		if e.First != nil {
			want = `{"class":"policy","paths":3,"dirs":1,"unused":"why","first":[{"base64":"Yf4="},"b \u003cc\u003e"]}`
		}
		if string(b) != want {
			t.Errorf("exclusion: got %s, want %s", b, want)
		}
		var e2 Exclusion
		if err := json.Unmarshal(b, &e2); err != nil || !reflect.DeepEqual(e2, e) {
			t.Errorf("exclusion: read back %#v, %v", e2, err)
		}
	}
}
