package initproc

import "testing"

// TestHoleNotAllowed plays an init of a production binary (Main(false)):
// sent a hole, it refuses to start, leaves nothing open and records no
// hole in the receipt.
func TestHoleNotAllowed(t *testing.T) {
	s := &initState{cfg: Config{TestHole: string(HoleUID)}, receipt: map[string]string{}}
	if err := s.checkHole(); err == nil || err.Error() != "a test hole was sent to an init that is not a test binary" {
		t.Errorf("checkHole outside a test binary: %v", err)
	}
	if s.open(HoleUID) || s.id() != SandboxID {
		t.Error("an init outside a test binary leaves the uid hole open")
	}
	if _, ok := s.receipt["test_hole"]; ok {
		t.Error("the receipt records a hole that is not open")
	}
	s.allowHoles = true
	if err := s.checkHole(); err != nil || !s.open(HoleUID) || s.id() != 0 {
		t.Errorf("a test binary's init: checkHole %v, open %v, id %d; want the uid hole open", err, s.open(HoleUID), s.id())
	}
}
