package enforcer_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestRunOnPinnedImage runs cat from a pinned image: the command resolves
// and runs inside the image's root, sandbox_launched names the digest, and
// a wrong pin runs nothing and names both digests.
func TestRunOnPinnedImage(t *testing.T) {
	testutil.RequireRoot(t)
	dir, d := testutil.CatImage(t)
	f := newFixture(t, nil)
	cache := filepath.Join(t.TempDir(), "cache")
	var out bytes.Buffer
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "read_file", Command: "cat", Args: []string{"/etc/marker"},
		Image: dir + "@" + d.String(), ImageCache: cache, Stdout: &out})
	if err != nil || res.ExitCode != 0 || out.String() != "from the image\n" {
		t.Fatalf("exit %d, err %v, output %q", res.ExitCode, err, out.String())
	}
	var launched audit.Event
	for _, ev := range f.events(res.RunID) {
		if ev.Context.Event == audit.EventSandboxLaunched {
			launched = ev
		}
	}
	if launched.Context.Details["image"] != d.String() {
		t.Errorf("sandbox_launched %+v does not name the image digest", launched.Context)
	}

	wrong := "sha256:" + strings.Repeat("0", 64)
	res, err = f.enf.Run(context.Background(), enforcer.Request{Tool: "read_file", Command: "cat", Args: []string{"/etc/marker"},
		Image: dir + "@" + wrong, ImageCache: cache, Stdout: &out})
	if err == nil || res.ExitCode != enforcer.ExitSetup || !strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), d.String()) {
		t.Fatalf("wrong pin: exit %d, err %v", res.ExitCode, err)
	}
	for _, ev := range f.events(res.RunID) {
		if ev.Context.Event == audit.EventSandboxLaunched {
			t.Fatal("a sandbox was launched on a wrong pin")
		}
	}
}
