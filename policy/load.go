package policy

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// MaxSize is the largest policy file airlock reads. Hand-written policies
// are a few kilobytes and generated ones of 10,000 rules about 1.3 MB; the
// cap keeps a hostile file from exhausting memory.
const MaxSize = 8 << 20

// EmbeddedName is the name under which the embedded default policy is
// reported in errors and audit events.
const EmbeddedName = "<embedded default>"

// defaultJSON is the embedded default policy: the seed lab's
// policy.json (phases 1.2 and 3.1 merged), byte for byte.
//
//go:embed default.json
var defaultJSON []byte

// Error is a problem in a policy file, located by line and column: Parse
// returns one for a file that does not parse.
type Error = strict.Error

// Errors is every validation problem of one policy, in file order.
type Errors = strict.Errors

// Loaded is a parsed, defaulted and validated policy with its origin.
type Loaded struct {
	*Policy
	// Source is the file it came from as it was named, or EmbeddedName.
	Source string
	// Path is the file's real path (absolute, every symbolic link
	// resolved), "" for the embedded default and for Parse.
	Path string
	// Origin says how it was chosen; "" for Load and Parse.
	Origin Origin
	// Digest is "sha256:" and the hex SHA-256 of the bytes as read, for
	// the audit stream.
	Digest string
	// Data is the bytes as read, parsed and checked: what a process that
	// decides under this policy elsewhere (a session's holder) is given,
	// never the file read again, which may have changed since.
	Data []byte
	// Warnings are what airlock policy check shows about the valid
	// policy: rules that may not hold as they read, each at its place.
	Warnings Errors

	where strict.Positions // where each field is in Data
}

// Origin says how the command line chose a policy (docs/policy.md, "Where
// the policy comes from").
type Origin string

// The origins of a policy.
const (
	// FromFlag is a policy named by --policy.
	FromFlag Origin = "--policy"
	// FromEnv is a policy named by $AIRLOCK_POLICY.
	FromEnv Origin = "$AIRLOCK_POLICY"
	// FromEmbedded is the embedded default: nothing was named.
	FromEmbedded Origin = "embedded"
)

// Info is where a policy came from and what it was, as results and
// explanations report it.
type Info struct {
	Source string `json:"source"`
	Path   string `json:"path,omitempty"`
	Origin Origin `json:"origin,omitempty"`
	Digest string `json:"digest"`
}

// HostFile returns the host file l was read from, by its real path when
// Load found it: "" for the embedded default.
func (l *Loaded) HostFile() string {
	switch {
	case l.Path != "":
		return l.Path
	case l.Source == EmbeddedName:
		return ""
	}
	return l.Source
}

// Info returns where l came from and its digest.
func (l *Loaded) Info() Info {
	return Info{Source: l.Source, Path: l.Path, Origin: l.Origin, Digest: l.Digest}
}

// Load reads, parses and validates the policy file at path. The file must
// be one that only the caller or root could have written (see
// docs/policy.md): a regular file owned by the caller or root, writable by
// nobody else, in directories that nobody else can write either. A FIFO
// or a device is refused without blocking.
func Load(path string) (*Loaded, error) {
	f, fi, err := hostfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	real, err := Trusted(path, fi)
	if err != nil {
		return nil, fmt.Errorf("policy: %s: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("policy: %s: %w", path, err)
	}
	l, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	l.Path = real
	return l, nil
}

// Default returns the embedded default policy, parsed.
func Default() *Loaded {
	l, err := Parse(EmbeddedName, defaultJSON)
	if err != nil {
		panic("policy: embedded default does not load: " + err.Error())
	}
	l.Origin, l.Data = FromEmbedded, bytes.Clone(defaultJSON)
	return l
}

// Find loads the policy the command line should use: file (--policy) when
// it is not empty, else $AIRLOCK_POLICY, else the embedded default. A
// policy.json in the working directory is never read: whoever can write
// the directory airlock runs in (an agent, the contained code through
// --findings) would choose the policy. See Unread.
func Find(file string) (*Loaded, error) {
	origin := FromFlag
	if file == "" {
		file, origin = os.Getenv("AIRLOCK_POLICY"), FromEnv
	}
	if file == "" {
		return Default(), nil
	}
	l, err := Load(file)
	if err != nil {
		return nil, err
	}
	l.Origin = origin
	return l, nil
}

// Unread is the notice for a policy.json in the working directory that
// Find did not read because l, the embedded default, was chosen; "" when
// there is none (or l is not the default). A dangling link counts: it
// too was once meant as the policy.
func Unread(l *Loaded) string {
	if l.Origin != FromEmbedded {
		return ""
	}
	if _, err := os.Lstat("policy.json"); err != nil {
		return ""
	}
	return "./policy.json is not read; pass --policy ./policy.json to use it"
}

// Outside refuses a policy file that lies in dir, compared by real paths:
// what names dir in the error ("--workspace"). The sandbox can write
// there (the workspace through a later run, --findings through the copy
// out), so such a policy could be its own.
func (l *Loaded) Outside(what, dir string) error {
	if l.Path == "" || dir == "" {
		return nil
	}
	real, err := hostfile.Real(dir)
	if err != nil {
		return fmt.Errorf("policy: %s %s: %w", what, dir, err)
	}
	if hostfile.Within(l.Path, real) {
		return fmt.Errorf("policy: %s is inside the run's %s directory %s, which the sandbox can write: "+
			"keep the policy where neither the agent nor the sandbox can write", l.Source, what, dir)
	}
	return nil
}

// Parse parses data as a policy named name (used in errors). The format
// is YAML when name ends in .yaml or .yml, or when data does not start
// with '{'; JSON otherwise. Parsing is strict: an unknown field, a wrong
// type, a duplicate key, trailing data or an out-of-range value is an
// error at its line and column. The result is validated; a validation
// failure returns Errors.
func Parse(name string, data []byte) (*Loaded, error) {
	var p Policy
	where, err := strict.Decode("policy", data, IsYAML(name, data), MaxSize, &p)
	if err != nil {
		return nil, strict.InFile(err, name)
	}
	if errs := p.Validate(); len(errs) > 0 {
		where.Place(errs, name)
		return nil, errs
	}
	ws := warn(&p)
	where.Place(ws, name)
	sum := sha256.Sum256(data)
	return &Loaded{Policy: &p, Source: name, Digest: "sha256:" + hex.EncodeToString(sum[:]), Data: data, Warnings: ws, where: where}, nil
}

// Place names l's file on each of errs, gives each the position of its
// field (Error.Path) in that file, and sorts them in file order: for the
// problems a later check finds (policy/authoring's examples).
func (l *Loaded) Place(errs Errors) { l.where.Place(errs, l.Source) }

// IsYAML reports whether Parse reads data, from a file named name, as
// YAML: for .yaml and .yml, and for a name of neither extension nor .json
// whose content does not start with '{'.
func IsYAML(name string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	return !bytes.HasPrefix(bytes.TrimLeft(strict.TrimBOM(data), " \t\r\n"), []byte("{"))
}
