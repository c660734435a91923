package audit

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// TestRotateContinuesChainAndTree rotates a signed log under a second
// writer and checks that the chain, the tree, checkpoints and proofs go
// on across the two files, and that the new file alone still verifies
// against a checkpoint signed after the rotation.
func TestRotateContinuesChainAndTree(t *testing.T) {
	s := testSigner(t)
	l, path, before := signedLog(t, s, 5) // 6 records
	other, err := Open(path)              // a writer that has the file open across the rotation
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	rotated, err := l.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if rotated != path+".6" {
		t.Fatalf("rotated to %s", rotated)
	}
	first := parseEvents(t, readLines(t, path))[0]
	if first.Context.Event != EventChainContinued || first.Seq != 7 || first.Context.Details["previous"] != "audit.jsonl.6" {
		t.Fatalf("the new file starts with %+v", first)
	}
	w, err := other.Append(denial("vcs", "curl"))
	if err != nil || w.Seq != 8 {
		t.Fatalf("the other writer's append after the rotation: seq %d, %v", w.Seq, err)
	}
	mine, err := l.Append(denial("vcs", "wget"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := l.Checkpoint()
	if err != nil || after.Size != 9 {
		t.Fatalf("checkpoint after: %+v %v", after, err)
	}
	both := func() io.Reader {
		a, _ := os.ReadFile(rotated)
		b, _ := os.ReadFile(path)
		return bytes.NewReader(append(a, b...))
	}
	rep, err := VerifyWith(both(), VerifyOptions{Checkpoints: []Checkpoint{before, after}})
	if err != nil || rep.Events != 9 || rep.TreeRoot != after.Root || len(rep.Checkpoints) != 2 {
		t.Fatalf("both files: %+v %v", rep, err)
	}
	rep, err = verifyFile(path, after)
	if err != nil || rep.ContinuedFrom != 7 || rep.TreeRoot != after.Root {
		t.Fatalf("the new file alone: %+v %v", rep, err)
	}
	// Proofs of records in either file, also after the tree file is lost.
	old := parseEvents(t, readLines(t, rotated))[2]
	for range 2 {
		if _, err := l.Prove(after, []Event{old, mine}); err != nil {
			t.Fatal(err)
		}
		os.Remove(path + sidecarSuffix)
	}
	// Without the rotated file, the roots still come from the
	// continuation's frontier: the signer goes on.
	os.Rename(rotated, rotated+".away")
	os.Remove(path + sidecarSuffix)
	if _, err := l.Append(denial("vcs", "nc")); err != nil {
		t.Fatal(err)
	}
	if cp, err := l.Checkpoint(); err != nil || cp.Size != 10 {
		t.Fatalf("without the rotated file: %+v %v", cp, err)
	}
	os.Rename(rotated+".away", rotated)

	// An earlier file changed under a re-chained forgery: the continuation
	// no longer matches it.
	evs := parseEvents(t, readLines(t, rotated))
	evs[3].Decision = DecisionAllow
	writeFile(t, rotated, rechain(t, evs))
	if _, err := VerifyWith(both(), VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "prev does not match") {
		t.Fatalf("a forged earlier file: %v", err)
	}
}
