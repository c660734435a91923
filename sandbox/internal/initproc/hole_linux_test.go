package initproc

import "testing"

// TestHoleNotRegistered plays an init and a parent of a binary without
// holes, as airlock's own is (this package's tests register none): sent a
// hole, the init refuses to start, leaves nothing open and records no
// hole in the receipt; the parent asks for none, whatever HoleEnv says.
func TestHoleNotRegistered(t *testing.T) {
	s := &initState{cfg: Config{TestHole: "uid"}, receipt: map[string]string{}}
	if err := s.checkHole(); err == nil || err.Error() != `test hole "uid": unknown to this binary` {
		t.Errorf("checkHole without holes: %v", err)
	}
	if s.hole != nil || s.id() != SandboxID {
		t.Error("an init without holes leaves the uid hole open")
	}
	if _, ok := s.receipt["test_hole"]; ok {
		t.Error("the receipt records a hole that is not open")
	}
	for _, name := range []string{"uid", "no-such-hole"} {
		t.Setenv(HoleEnv, name)
		if h, err := RequestedHole(); h != nil || err != nil {
			t.Errorf("%s=%s without holes: hole %v, error %v; want none", HoleEnv, name, h, err)
		}
	}
}
