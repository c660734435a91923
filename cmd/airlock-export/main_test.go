package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/policyflag"
)

// TestK8sPolicyFlag: airlock-export k8s takes its policy as every
// airlock command does: --policy FILE is the one exported (its
// ConfigMap carries that file), the help says what airlock's says (no
// ./policy.json fallback, which no command has), and an empty name is a
// usage mistake.
func TestK8sPolicyFlag(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "pol.json")
	if err := os.WriteFile(pol, []byte(`{"toolScopes": {"only_true": {"allow": [{"name": "true", "command": "true"}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	image := "localhost/ci@sha256:015ac325c5f5b60778313e15359890864fd2ce9ed9cc6e3b35e9368526af225b"
	run := func(args ...string) (string, bool, error) {
		cmd := newK8sCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), errors.As(err, new(usageError)), err
	}
	out, _, err := run("--policy", pol, "--tool", "only_true", "--image", image, "--", "true")
	if err != nil || !strings.Contains(out, "only_true") {
		t.Fatalf("export with --policy: %v\n%s", err, out)
	}
	out, _, err = run("--help")
	if err != nil || !strings.Contains(out, policyflag.Help) || strings.Contains(out, "else ./policy.json") {
		t.Errorf("help: %v\n%s", err, out)
	}
	if _, usage, err := run("--policy", "", "--tool", "only_true", "--image", image, "--", "true"); err == nil || !usage {
		t.Errorf("an empty --policy: %v, usage %v", err, usage)
	}
}
