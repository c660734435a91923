package audit

import (
	"crypto/ed25519"
	"sync"
)

// PrepareSigning has the Ed25519 tables that loading a signing key,
// signing a checkpoint and checking the last one signed use built in the
// background, once per process. Go's crypto builds them on first use,
// about 1 ms of CPU on the development VM (0.7–1.5 ms for the key's, 0.2–0.4
// ms for the check's), which would otherwise lie on a run's way in
// (LoadSigner derives the key's public half) and out (Log.Checkpoint
// checks the kept checkpoint's signature). A command that will load a
// Signer calls it as early as it can; it computes with a fixed key and
// touches nothing else.
func PrepareSigning() { prepareSigning() }

var prepareSigning = sync.OnceFunc(func() { go warmEd25519() })

// warmEd25519 signs and verifies once with the all-zero seed's key.
func warmEd25519() {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	sig := ed25519.Sign(key, nil)
	ed25519.Verify(key.Public().(ed25519.PublicKey), nil, sig)
}
