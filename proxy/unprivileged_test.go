package proxy

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestUnprivileged re-runs the end-to-end tests as nobody: the proxy
// needs no privilege (it runs beside rootless sandboxes).
func TestUnprivileged(t *testing.T) {
	testutil.RequireRoot(t)
	tests := []string{"TestConnectTunnel", "TestSOCKS5Tunnels", "TestHTTPForward", "TestIdleTimeout", "TestHalfCloseClientFirst"}
	cmd := testutil.AsNobody(t, exec.Command(os.Args[0], "-test.v", "-test.count=1", "-test.run", "^("+strings.Join(tests, "|")+")$"))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + cmd.Dir, "TMPDIR=" + os.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	for _, name := range tests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass as nobody:\n%s", name, out)
		}
	}
}
