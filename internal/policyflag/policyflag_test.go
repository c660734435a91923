package policyflag_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/internal/policyflag"
	"github.com/airlock-sandbox/airlock/policy"
)

// TestLoad: the named file, else the embedded default; an empty name is
// ErrNoName; a command without the flag cannot load a policy at all
// (where it would have taken the default, whatever its caller named).
func TestLoad(t *testing.T) {
	t.Setenv("AIRLOCK_POLICY", "")
	file := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(file, []byte(`{"toolScopes": {"mine": {"allow": [{"name": "true", "command": "true"}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := &cobra.Command{Use: "x"}
	policyflag.Add(cmd)
	if l, err := policyflag.Load(cmd); err != nil || l.Origin != policy.FromEmbedded {
		t.Errorf("no --policy: %v, %v", l, err)
	}
	if err := cmd.Flags().Set("policy", file); err != nil {
		t.Fatal(err)
	}
	if l, err := policyflag.Load(cmd); err != nil || l.Origin != policy.FromFlag || len(l.ToolScopes["mine"].Allow) != 1 {
		t.Errorf("--policy %s: %v", file, err)
	}
	if err := cmd.Flags().Set("policy", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := policyflag.Load(cmd); !errors.Is(err, policyflag.ErrNoName) {
		t.Errorf("--policy '': %v, want ErrNoName", err)
	}
	bare := &cobra.Command{Use: "bare"}
	if _, err := policyflag.Load(bare); err == nil || !strings.Contains(err.Error(), "bare reads a policy but has no --policy flag") {
		t.Errorf("a command without the flag: %v", err)
	}
}
