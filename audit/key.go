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
	signer note.Signer
	vkey   string
	dir    string
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
// in PublicKeyFileName, is what verifiers are given.
func LoadSigner(path string) (*Signer, error) {
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
	s.dir = dir
	return s, nil
}

// parseSigner reads a note signer key, PRIVATE+KEY+NAME+HASH+KEY, and
// derives its public (verifier) key.
func parseSigner(skey string) (*Signer, error) {
	sg, err := note.NewSigner(skey)
	if err != nil {
		return nil, errors.New("not a signed-note Ed25519 private key (PRIVATE+KEY+name+hash+key)")
	}
	parts := strings.SplitN(skey, "+", 5) // the key's base64 may hold '+'
	raw, err := base64.StdEncoding.DecodeString(parts[len(parts)-1])
	if err != nil || len(raw) != 1+ed25519.SeedSize {
		return nil, errors.New("not a signed-note Ed25519 private key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(sg.Name(), pub)
	if err != nil {
		return nil, err
	}
	return &Signer{signer: sg, vkey: vkey}, nil
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

// Name is the key's name, the first part of every origin it signs.
func (s *Signer) Name() string { return s.signer.Name() }

// PublicKey is the verifier key, NAME+HASH+KEY: what "airlock audit
// verify --key" and golang.org/x/mod/sumdb/note.NewVerifier take.
func (s *Signer) PublicKey() string { return s.vkey }

// Dir is the key's private directory.
func (s *Signer) Dir() string { return s.dir }
