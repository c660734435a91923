package holder_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// manyFiles makes 5,000 files under a path of some 3,800 bytes: their
// manifest is some 20 MB of JSON, over a frame's limit, and their patch
// over its size limit.
const manyFiles = `d=$(printf 'd%.0s' $(seq 250)); p=$d/$d/$d/$d/$d/$d/$d/$d/$d/$d/$d/$d/$d/$d/$d
mkdir -p $p && cd $p && i=0 && while [ $i -lt 5000 ]; do : > f$i; i=$((i+1)); done`

// TestManifestOverFrames: a manifest larger than a frame comes back
// whole, over as many frames as it takes, from changes and from stop
// (they failed with "the holder did not answer", though the stop had
// stopped the session and written a partial patch).
func TestManifestOverFrames(t *testing.T) {
	testutil.RequireRoot(t)
	dir, _, info := newSession(t)
	c, err := holder.Dial(dir, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if res, err := c.Exec(context.Background(), sh(manyFiles, &out)); err != nil || res.ExitCode != 0 {
		t.Fatalf("step: %+v %v %s", res, err, out.String())
	}
	check := func(what string, patch *os.File, files int, incomplete string) {
		t.Helper()
		st, err := patch.Stat()
		if err != nil {
			t.Fatal(err)
		}
		// 5,000 files and their 15 directories; the patch carries what
		// fits in its 32 MiB and says so.
		if files != 5000 || incomplete == "" || !strings.Contains(incomplete, "(Limits.PatchBytes)") || st.Size() < 30<<20 {
			t.Errorf("%s: %d files, patch of %d bytes, incomplete %.200q", what, files, st.Size(), incomplete)
		}
	}
	patch, err := os.Create(filepath.Join(t.TempDir(), "changes.patch"))
	if err != nil {
		t.Fatal(err)
	}
	defer patch.Close()
	ch, err := c.Changes(patch)
	if err != nil {
		t.Fatalf("changes: %v", err)
	}
	check("changes", patch, len(ch.Files), ch.Incomplete)

	stopPatch, err := os.Create(filepath.Join(t.TempDir(), "stop.patch"))
	if err != nil {
		t.Fatal(err)
	}
	defer stopPatch.Close()
	sum, sch, err := c.Stop(nil, stopPatch)
	if err != nil || sch == nil || sum.Steps != 1 {
		t.Fatalf("stop: %+v %v %v", sum, sch != nil, err)
	}
	check("stop", stopPatch, len(sch.Files), sch.Incomplete)
	waitGone(t, info.Watchdog)
}
