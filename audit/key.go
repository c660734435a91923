package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/mod/sumdb/note"

	"github.com/airlock-sandbox/airlock/internal/privstate"
)

// KeyFileName is the signing key's file in its directory; the public key
// is beside it, in PublicKeyFileName.
const (
	KeyFileName       = "signing.key"
	PublicKeyFileName = "signing.pub"
)

// maxKeyFile bounds what a key file may hold.
const maxKeyFile = 4 << 10

// Signer signs a log's checkpoints with an Ed25519 key, as a C2SP signed
// note (golang.org/x/mod/sumdb/note), and keeps, in the key's private
// directory, the last checkpoint it signed for each log, so that it never
// signs one that is inconsistent with it (see Log.Checkpoint).
type Signer struct {
	name, path, dir string
	// keys is the key's derivation, which PrepareSigner begins in the
	// background: it needs Go's Ed25519 tables, built on first use in
	// about 1 ms of CPU, which a run's start would otherwise wait for.
	keys func() (signerKeys, error)
}

// signerKeys are a Signer's keys, derived from its private key.
type signerKeys struct {
	signer note.Signer
	vkey   string
}

// DefaultKeyDir returns the directory of the default signing key,
// $XDG_STATE_HOME/airlock/audit-key (else ~/.local/state/airlock/audit-key),
// created 0700 and checked as the approval store's is: a real directory
// of the caller's, closed to group and others, under a state directory no
// one else can write. Nothing in it may ever be reachable from a sandbox.
func DefaultKeyDir() (string, error) {
	base, err := privstate.Base()
	if err != nil {
		return "", fmt.Errorf("audit: signing key: %w", err)
	}
	dir, err := privstate.Dirs(base, "airlock", "audit-key")
	if err != nil {
		return "", fmt.Errorf("audit: signing key: %w", err)
	}
	return dir, nil
}

// LoadSigner loads the signing key at path, creating it (0600) on first
// use; "" means KeyFileName in DefaultKeyDir. The key's directory must be
// private (see DefaultKeyDir): the checkpoints it signed are kept there.
// A new key is named "airlock/HOST"; its public key, written beside it
// in PublicKeyFileName, is what verifiers are given. It returns once the
// key is checked (Check).
func LoadSigner(path string) (*Signer, error) {
	s, err := PrepareSigner(path)
	if err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

// PrepareSigner is LoadSigner without waiting for the key's check: it
// reads the key file and checks its form, and derives the keys in the
// background, which on a process's first use of Ed25519 takes about 1 ms
// of CPU. Call Check before acting on the key's word: a key that fails it
// signs nothing.
func PrepareSigner(path string) (*Signer, error) {
	var dir string
	if path == "" {
		d, err := DefaultKeyDir()
		if err != nil {
			return nil, err
		}
		dir, path = d, filepath.Join(d, KeyFileName)
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("audit: signing key %s: %w", path, err)
		}
		path, dir = abs, filepath.Dir(abs)
		if err := privstate.CheckDir(dir); err != nil {
			return nil, fmt.Errorf("audit: signing key %s: its directory: %w", path, err)
		}
	}
	data, err := privstate.ReadPrivate(path, maxKeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		skey, vkey, gerr := note.GenerateKey(rand.Reader, keyName())
		if gerr != nil {
			return nil, fmt.Errorf("audit: signing key: %w", gerr)
		}
		if werr := privstate.WriteOnce(dir, filepath.Base(path), []byte(skey+"\n")); werr != nil && !errors.Is(werr, fs.ErrExist) {
			return nil, fmt.Errorf("audit: creating the signing key %s: %w", path, werr)
		}
		_ = os.WriteFile(filepath.Join(dir, strings.TrimSuffix(filepath.Base(path), ".key")+".pub"), []byte(vkey+"\n"), 0o644)
		data, err = privstate.ReadPrivate(path, maxKeyFile)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: signing key: %w", err)
	}
	s, err := parseSigner(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("audit: signing key %s: %w", path, err)
	}
	s.path, s.dir = path, dir
	return s, nil
}

// errNotKey is a key file that does not hold a signer key.
var errNotKey = errors.New("not a signed-note Ed25519 private key (PRIVATE+KEY+name+hash+key)")

// parseSigner checks the form of a note signer key,
// PRIVATE+KEY+NAME+HASH+KEY with an Ed25519 seed, and begins deriving its
// signer and public (verifier) key in the background (Check).
func parseSigner(skey string) (*Signer, error) {
	parts := strings.SplitN(skey, "+", 5) // the key's base64 may hold '+'
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return nil, errNotKey
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize {
		return nil, errNotKey
	}
	s := &Signer{name: parts[2]}
	s.keys = sync.OnceValues(func() (signerKeys, error) {
		sg, err := note.NewSigner(skey) // checks the name and the key's hash
		if err != nil {
			return signerKeys{}, errNotKey
		}
		pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
		vkey, err := note.NewEd25519VerifierKey(sg.Name(), pub)
		if err != nil {
			return signerKeys{}, err
		}
		return signerKeys{signer: sg, vkey: vkey}, nil
	})
	go func() {
		s.keys()
		warmVerify()
	}()
	return s, nil
}

// warmVerify builds the tables of Ed25519's verification, once per
// process, in the background: the first check of a signature otherwise
// builds them (about 0.2 ms of CPU), at the end of a run, when its
// checkpoint is checked against the last one signed.
var warmVerify = sync.OnceFunc(func() {
	ed25519.Verify(make(ed25519.PublicKey, ed25519.PublicKeySize), nil, make([]byte, ed25519.SignatureSize))
})

// Check waits for the derivation of the key's signer and public key,
// which PrepareSigner began, and reports whether the key is good: its name
// valid and its hash its public key's. A key that fails signs nothing.
// airlock checks before a command runs (enforcer).
func (s *Signer) Check() error {
	if _, err := s.keys(); err != nil {
		return fmt.Errorf("audit: signing key %s: %w", s.path, err)
	}
	return nil
}

// keyName is a new key's name: "airlock/" and the host's name, with
// anything a note name may not hold (space, '+') replaced by '_'.
func keyName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '+' || !unicode.IsPrint(r) {
			return '_'
		}
		return r
	}, host)
	return "airlock/" + host
}

// Name is the key's name, the first part of every origin it signs, as
// the key file gives it (Check says whether it is valid).
func (s *Signer) Name() string { return s.name }

// PublicKey is the verifier key, NAME+HASH+KEY: what "airlock audit
// verify --key" and golang.org/x/mod/sumdb/note.NewVerifier take; "" for
// a key that fails Check.
func (s *Signer) PublicKey() string {
	k, _ := s.keys()
	return k.vkey
}

// Dir is the key's private directory.
func (s *Signer) Dir() string { return s.dir }
