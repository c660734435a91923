package main

import (
	"errors"
	"fmt"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/airlock-sandbox/airlock/audit"
)

// loadSigner loads the audit log's signing key: the file $AIRLOCK_AUDIT_KEY
// names, else the default in airlock's private state, created on first
// use (docs/audit.md, "Checkpoints").
func loadSigner() (*audit.Signer, error) { return audit.LoadSigner(os.Getenv("AIRLOCK_AUDIT_KEY")) }

// prepareSigner is loadSigner whose key is checked in the background
// (audit.PrepareSigner): the enforcer waits for the check before a command
// runs.
func prepareSigner() (*audit.Signer, error) {
	return audit.PrepareSigner(os.Getenv("AIRLOCK_AUDIT_KEY"))
}

// publicKey reads a --key value: a verifier key NAME+HASH+KEY, or a file
// holding one (the key's signing.pub).
func publicKey(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if _, err := note.NewVerifier(v); err == nil {
		return v, nil
	}
	b, err := hostfile.ReadFile(v, 4<<10) // a FIFO is refused, not waited on
	if err != nil {
		return "", usageError{fmt.Errorf("--key: want a public key NAME+HASH+KEY or a file holding one: %w", err)}
	}
	k := strings.TrimSpace(string(b))
	if _, err := note.NewVerifier(k); err != nil {
		return "", usageError{errors.New("--key: the file does not hold a public key NAME+HASH+KEY")}
	}
	return k, nil
}
