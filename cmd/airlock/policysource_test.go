package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// TestPolicySourceIsWhatWasChecked: session start hands its holder the
// bytes of the policy it loaded and checked. The file swapped for another
// between that check and the holder's start (here, right after the load)
// changes nothing: it is never read again.
func TestPolicySourceIsWhatWasChecked(t *testing.T) {
	dir := t.TempDir()
	file, swap := filepath.Join(dir, "policy.json"), filepath.Join(dir, "swap.json")
	checked := []byte(`{"toolScopes": {"t": {"allow": [{"name": "ls", "command": "ls"}]}}}`)
	evil := []byte(`{"toolScopes": {"t": {"allow": [{"name": "bash", "command": "bash", "allowExtraArgs": true}]}}}`)
	if err := os.WriteFile(file, checked, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(swap, evil, 0o644); err != nil {
		t.Fatal(err)
	}
	testHookPolicyLoaded = func(*policy.Loaded) {
		if err := os.Rename(swap, file); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { testHookPolicyLoaded = func(*policy.Loaded) {} })
	cmd := newSessionStartCmd()
	if err := cmd.Flags().Set("policy", file); err != nil {
		t.Fatal(err)
	}
	name, data, err := policySource(cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(checked) || name != file {
		t.Fatalf("the holder would get %s from %s, want the checked %s", data, name, checked)
	}
}
