package enforcer_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/enforcer"
)

// frozenFake is a sandbox that freezes and snapshots nothing.
type frozenFake struct{ froze bool }

func (f *frozenFake) Freeze() (string, error) { f.froze = true; return "fake freezer", nil }
func (f *frozenFake) Evidence(dir string) (enforcer.Evidence, error) {
	return enforcer.Evidence{Dir: dir}, errors.New("fake: no snapshot")
}

// TestSuspect: the suspected-escape procedure freezes the sandbox,
// records before it keeps the evidence, in a directory of its own (never
// one that exists: another's evidence), notes what it could not collect,
// and, with no directory, still freezes and records why there is none.
func TestSuspect(t *testing.T) {
	under := t.TempDir()
	var order []string
	s := enforcer.Suspicion{Under: under, Name: "run-1",
		Record: func(freeze, evidence string) { order = append(order, "record "+freeze+" "+evidence) },
		Collect: func(f *enforcer.EvidenceFiles) {
			order = append(order, "collect")
			f.JSON("summary.json", f.Problems)
		}}
	sb := &frozenFake{}
	dir, err := enforcer.Suspect(sb, s)
	want := filepath.Join(under, "run-1")
	if err != nil || dir != want || !sb.froze {
		t.Fatalf("Suspect: %q, %v (frozen %v)", dir, err, sb.froze)
	}
	if len(order) != 2 || order[0] != "record fake freezer "+want || order[1] != "collect" {
		t.Errorf("order %q", order)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err != nil || !strings.Contains(string(b), "fake: no snapshot") {
		t.Errorf("summary.json: %s, %v", b, err)
	}
	// The same name again: its directory exists, so none is kept.
	order = nil
	sb = &frozenFake{}
	if dir, err := enforcer.Suspect(sb, s); err == nil || dir != "" || !sb.froze {
		t.Fatalf("a second Suspect into the same directory: %q, %v", dir, err)
	}
	if len(order) != 1 || !strings.HasPrefix(order[0], "record fake freezer none: evidence: ") {
		t.Errorf("order %q", order)
	}
	// Unique: a directory of its own beside it.
	s.Unique = true
	if dir, err := enforcer.Suspect(sb, s); err != nil || filepath.Dir(dir) != under || !strings.HasPrefix(filepath.Base(dir), "run-1-") {
		t.Errorf("Unique: %q, %v", dir, err)
	}
}
