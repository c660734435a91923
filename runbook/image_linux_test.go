package runbook_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/runbook"
)

// TestLaunchImage runs a plan on a pinned image: the step sees the
// image's root, and sandbox_launched names the digest.
func TestLaunchImage(t *testing.T) {
	testutil.RequireRoot(t)
	dir, d := testutil.CatImage(t)
	e := newEnv(t)
	e.opts.Image = dir + "@" + d.String()
	e.opts.ImageCache = filepath.Join(e.dir, "cache")
	var out bytes.Buffer
	e.opts.Stdout = &out
	res, err := e.launch(t, context.Background(), plan("T-image", runbook.Step{Command: "cat", Args: []string{"/etc/marker"}}))
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != runbook.ExitOK || out.String() != "from the image\n" {
		t.Fatalf("result %+v, output %q", res, out.String())
	}
	if res.Image == nil || res.Image.Digest != d.String() {
		t.Errorf("image %+v, want digest %s", res.Image, d)
	}
	launched := lifecycle(e.events(t), audit.EventSandboxLaunched)
	if len(launched) != 1 || launched[0].Context.Details["imageDigest"] != d.String() || launched[0].Context.Details["testId"] != "T-image" {
		t.Fatalf("sandbox_launched: %+v", launched)
	}
}

// TestLaunchImageMismatch: an image that does not match its pin refuses
// the launch, naming the expected and the actual digest.
func TestLaunchImageMismatch(t *testing.T) {
	testutil.RequireRoot(t)
	dir, d := testutil.CatImage(t)
	e := newEnv(t)
	wrong := "sha256:" + strings.Repeat("0", 64)
	e.opts.Image = dir + "@" + wrong
	e.opts.ImageCache = filepath.Join(e.dir, "cache")
	res, err := e.launch(t, context.Background(), plan("T-image", runbook.Step{Command: "cat", Args: []string{"/etc/marker"}}))
	if err == nil || res.ExitCode != runbook.ExitSetup {
		t.Fatalf("result %+v, err %v", res, err)
	}
	if !strings.Contains(res.Reason, "the image does not verify: image: manifest digest mismatch: expected "+wrong+", got "+d.String()) {
		t.Errorf("reason %q does not name the expected and the actual digest", res.Reason)
	}
	evs := e.events(t)
	if len(lifecycle(evs, audit.EventSandboxLaunched)) != 0 || len(lifecycle(evs, audit.EventStartupRefused)) != 0 ||
		len(lifecycle(evs, audit.EventSetupFailed)) != 1 || res.Outcome != runbook.OutcomeSetup {
		t.Errorf("lifecycle events: %+v", ofKind(evs, audit.KindLifecycle))
	}
}
