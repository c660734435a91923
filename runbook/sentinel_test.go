package runbook

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestHostSnapshotChanges(t *testing.T) {
	dir := t.TempDir()
	mk := func(p, body string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("file", "x")
	mk("findings/a", "a")
	mk("ws/top", "t")
	mk("ws/sub/deep", "d")
	mk("findings/audit.jsonl", "log")
	files := []string{filepath.Join(dir, "file"), filepath.Join(dir, "missing")}
	trees := []watchedTree{{Path: filepath.Join(dir, "findings")}, {Path: filepath.Join(dir, "ws"), Depth: 1}}
	skip := []string{filepath.Join(dir, "findings/audit.jsonl")}
	before := snapshotHost(files, trees, skip)
	if ch := before.changes(snapshotHost(files, trees, skip)); len(ch) != 0 {
		t.Fatalf("changes without a change: %q", ch)
	}
	time.Sleep(10 * time.Millisecond) // a coarse-mtime file system
	mk("file", "y")                   // same size, new content
	mk("missing", "now")
	mk("findings/b", "b")
	os.Remove(filepath.Join(dir, "findings/a"))
	mk("findings/audit.jsonl", "log grows")  // skipped: airlock's own
	mk("ws/sub/deep", "deeper than watched") // below the depth
	got := before.changes(snapshotHost(files, trees, skip))
	var short []string
	for _, c := range got {
		short = append(short, strings.SplitN(strings.ReplaceAll(c, dir+"/", ""), " (", 2)[0])
	}
	want := []string{"changed file", "changed findings", "created findings/b", "created missing", "removed findings/a"}
	if !reflect.DeepEqual(short, want) {
		t.Fatalf("changes %q\nwant %q", got, want)
	}
}
