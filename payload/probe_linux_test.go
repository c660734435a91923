package payload

import (
	"os"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestProbesGetTheKernelsAnswer runs every probe outside any sandbox (no
// seccomp filter), where the kernel answers it: with the errno the probe
// documents, which differs from the filter's. This is what makes a probe
// that got the filter's errno inside a proof that the filter answered.
func TestProbesGetTheKernelsAnswer(t *testing.T) {
	if _, err := os.Stat(probeDir); err == nil {
		t.Skipf("%s exists on this host: the path probes would not be refused", probeDir)
	}
	filterErrnos := map[string]bool{"EPERM": true, "ENOSYS": true, "EAFNOSUPPORT": true}
	for name, p := range probes {
		got := errnoName(p.Call())
		if got != p.Kernel {
			t.Errorf("probe %s: the kernel answered %q, the probe documents %q", name, orNone(got), p.Kernel)
		}
		if filterErrnos[p.Kernel] {
			t.Errorf("probe %s: the kernel's answer %s is one the filter gives too: it discriminates nothing", name, p.Kernel)
		}
	}
}

func TestErrnoName(t *testing.T) {
	if got := errnoName(nil); got != "" {
		t.Errorf("nil: %q", got)
	}
	if got := errnoName(&os.PathError{Op: "open", Path: "/x", Err: os.ErrNotExist}); got != "non-errno" {
		t.Errorf("a wrapped non-errno: %q", got)
	}
	_, err := os.Open("/nonexistent-airlock-payload-test")
	if got := errnoName(err); got != "ENOENT" {
		t.Errorf("a wrapped errno: %q", got)
	}
}

// TestProbesRootless runs the probes again as uid 65534 with no
// capability: their answers must not depend on privilege.
func TestProbesRootless(t *testing.T) {
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t))
	cmd.Args = append(cmd.Args[:1], "-test.run=^TestProbesGetTheKernelsAnswer$", "-test.count=1", "-test.v")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestProbesGetTheKernelsAnswer") {
		t.Fatalf("the probes as uid 65534: %v\n%s", err, out)
	}
}
