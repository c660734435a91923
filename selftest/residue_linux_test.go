package selftest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestResidueFindsLeftovers leaves one of each kind of residue the check
// looks for and makes sure each is reported, and nothing else.
func TestResidueFindsLeftovers(t *testing.T) {
	before := takeSnapshot()
	token := fmt.Sprintf("%stest-%d", tokenPrefix, os.Getpid())

	file := filepath.Join(os.TempDir(), token+"-left")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(file)
	root := t.TempDir()

	proc := exec.Command("sleep", "30")
	proc.Env = []string{envToken + "=" + token}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	defer proc.Wait()

	fd, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	ns, err := os.Open("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()

	r := residue(before, token, []string{root})
	want := map[string]string{"processes": "sleep 30", "descriptors": os.DevNull, "namespaces": "net:[", "files": token + "-left"}
	if r.Clean {
		t.Error("the residue check found nothing")
	}
	for _, c := range r.Checks {
		w, left := want[c.Name]
		switch {
		case left && (c.Clean || !strings.Contains(c.Detail, w)):
			t.Errorf("%s: clean %v, %q: want %q reported", c.Name, c.Clean, c.Detail, w)
		case !left && !c.Clean:
			t.Errorf("%s: reported %q, but nothing of that kind was left", c.Name, c.Detail)
		}
	}
	if !strings.Contains(r.Checks[5].Detail, root) {
		t.Errorf("a battery directory that was not removed must be reported: %q", r.Checks[5].Detail)
	}
	// The process carrying the token was killed by the check.
	if err := proc.Wait(); err == nil {
		t.Error("the leftover process was not killed")
	}
}
