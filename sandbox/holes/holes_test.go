package holes

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNotInAirlock: airlock's binaries link neither this package nor the
// testing package, so they hold no hole and no code that skips a control,
// while the init they run is linked in.
func TestNotInAirlock(t *testing.T) {
	const mod = "github.com/airlock-sandbox/airlock/"
	for _, cmd := range []string{"cmd/airlock", "cmd/airlock-init"} {
		out, err := exec.Command("go", "list", "-deps", mod+cmd).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", cmd, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, mod+"sandbox/internal/initproc") {
			t.Fatalf("%s does not link the init: %v", cmd, deps)
		}
		for _, p := range []string{mod + "sandbox/holes", "testing"} {
			if slices.Contains(deps, p) {
				t.Errorf("%s links %s", cmd, p)
			}
		}
	}
}
