package testutil

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// DamagedSigningKey writes, in a fresh private directory, a signed-note
// Ed25519 private key file of the right form whose hash is not its public
// key's (1 in 2^32 that it was), as a damaged key file is, and returns
// its path.
func DamagedSigningKey(t testing.TB, fileName string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "key")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	skey, _, err := note.GenerateKey(rand.Reader, "airlock/test")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(skey, "+", 5)
	parts[3] = "00000000"
	path := filepath.Join(dir, fileName)
	if err := os.WriteFile(path, []byte(strings.Join(parts, "+")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
