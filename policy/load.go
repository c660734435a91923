package policy

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/strict"
)

// MaxSize is the largest policy file airlock reads. Hand-written policies
// are a few kilobytes and generated ones of 10,000 rules about 1.3 MB; the
// cap keeps a hostile file from exhausting memory.
const MaxSize = 8 << 20

// EmbeddedName is the name under which the embedded default policy is
// reported in errors and audit events.
const EmbeddedName = "<embedded default>"

//go:embed default.json
var defaultJSON []byte

// DefaultJSON returns the embedded default policy: the seed lab's
// policy.json (phases 1.2 and 3.1 merged), byte for byte.
func DefaultJSON() []byte { return bytes.Clone(defaultJSON) }

// Error is a problem in a policy file, located by line and column: Parse
// returns one for a file that does not parse.
type Error = strict.Error

// Errors is every validation problem of one policy, in file order.
type Errors = strict.Errors

// Loaded is a parsed, defaulted and validated policy with its origin.
type Loaded struct {
	*Policy
	// Source is the file it came from, or EmbeddedName.
	Source string
	// Digest is "sha256:" and the hex SHA-256 of the bytes as read, for
	// the audit stream.
	Digest string
}

// Load reads, parses and validates the policy file at path.
func Load(path string) (*Loaded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("policy: %s: %w", path, err)
	}
	return Parse(path, data)
}

// Default returns the embedded default policy, parsed.
func Default() *Loaded {
	l, err := Parse(EmbeddedName, defaultJSON)
	if err != nil {
		panic("policy: embedded default does not load: " + err.Error())
	}
	return l
}

// Find loads the policy the command line should use: file when it is not
// empty, else $AIRLOCK_POLICY, else ./policy.json when it exists, else the
// embedded default.
func Find(file string) (*Loaded, error) {
	if file == "" {
		file = os.Getenv("AIRLOCK_POLICY")
	}
	if file != "" {
		return Load(file)
	}
	l, err := Load("policy.json")
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	return l, err
}

// Parse parses data as a policy named name (used in errors). The format
// is YAML when name ends in .yaml or .yml, or when data does not start
// with '{'; JSON otherwise. Parsing is strict: an unknown field, a wrong
// type, a duplicate key, trailing data or an out-of-range value is an
// error at its line and column. The result is validated; a validation
// failure returns Errors.
func Parse(name string, data []byte) (*Loaded, error) {
	var p Policy
	where, err := strict.Decode("policy", data, isYAML(name, data), MaxSize, &p)
	if err != nil {
		return nil, strict.InFile(err, name)
	}
	if errs := validate(&p); len(errs) > 0 {
		where.Place(errs, name)
		return nil, errs
	}
	sum := sha256.Sum256(data)
	return &Loaded{Policy: &p, Source: name, Digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

func isYAML(name string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	return !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
}
