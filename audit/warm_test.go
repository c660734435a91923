package audit

import (
	"sync"
	"testing"
)

// TestPrepareSigningBesideUse: the background warm-up may run while keys
// are loaded and checkpoints signed and checked, from any goroutine (the
// race detector watches), and leaves every result as it would be.
func TestPrepareSigningBesideUse(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(PrepareSigning)
	}
	s := testSigner(t)
	_, path, cp := signedLog(t, s, 3)
	wg.Wait()
	if _, err := ParseCheckpoint([]byte(cp.Note), s.PublicKey()); err != nil {
		t.Fatalf("the checkpoint of %s does not verify: %v", path, err)
	}
}
