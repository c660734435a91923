package changes

import (
	"encoding/json"
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
