package cmdgate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-sandbox/airlock/policy"
)

// ErrNotInstalled is returned by Resolve when no executable file of that
// name exists on the search path.
var ErrNotInstalled = errors.New("no such executable")

// ErrNotExecutable is returned by Resolve when the file is there but is
// not an executable regular file (no execute bit, a directory).
var ErrNotExecutable = errors.New("not an executable file")

// Exit statuses of a command that cannot be run, as the shell and podman
// give them (docs/cli.md, "Exit codes").
const (
	// StatusNotExecutable: found, but it cannot be executed.
	StatusNotExecutable = 126
	// StatusNotInstalled: no such command.
	StatusNotInstalled = 127
)

// ResolveStatus is the exit status of a command Resolve could not
// resolve with err: StatusNotInstalled, StatusNotExecutable, or 0 when
// err is neither (airlock's own failure: the caller's setup status).
func ResolveStatus(err error) int {
	switch {
	case errors.Is(err, ErrNotInstalled):
		return StatusNotInstalled
	case errors.Is(err, ErrNotExecutable):
		return StatusNotExecutable
	}
	return 0
}

// Program returns where a path-named command lies: its absolute path (a
// relative one taken from dir, the step's working directory) and, when
// that is a workspace program (policy.ProgramTree), its tree, which the
// sandbox's init resolves it in (sandbox.Config.Tree). A bare name, or a
// path the gate refuses, gives "", "".
func Program(command, dir string) (p, tree string) {
	if !strings.Contains(command, "/") {
		return "", ""
	}
	p, refused := commandKey(command, dir)
	if refused != "" {
		return "", ""
	}
	return p, policy.ProgramTree(p)
}

// Resolve returns the absolute path airlock executes for command. A bare
// name is looked up in searchPath only — never the caller's $PATH, never
// the working directory or the workspace — so a file named like an
// allowed command elsewhere cannot stand in for it. A command naming an
// absolute path resolves to itself. root, when not empty, is prepended to
// every lookup (an image's root file system); the returned path is the
// path inside root.
//
// Resolution is separate from the decision: the gate matches names and
// never depends on what is installed.
func Resolve(root, command string, searchPath []string) (string, error) {
	if command == "" || strings.IndexByte(command, 0) >= 0 {
		return "", fmt.Errorf("resolve %q: invalid command name", command)
	}
	if strings.Contains(command, "/") {
		if !filepath.IsAbs(command) || filepath.Clean(command) != command {
			return "", fmt.Errorf("resolve %q: a path-named command must be a clean absolute path", command)
		}
		if err := executableIn(root, command); err != nil {
			return "", fmt.Errorf("resolve %q: %w", command, err)
		}
		return command, nil
	}
	for _, dir := range searchPath {
		if !filepath.IsAbs(dir) {
			continue // validation refuses these; never search relative to the cwd
		}
		p := filepath.Join(dir, command)
		if executableIn(root, p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: searched %s for %q", ErrNotInstalled, strings.Join(searchPath, ":"), command)
}

// executableIn reports whether p, an absolute path inside root (the host
// when root is ""), is a regular file with an execute bit.
func executableIn(root, p string) error {
	if root == "" {
		return executable(os.Stat(p))
	}
	return executable(statInRoot(root, p))
}

// executable reports whether a stat result is a regular file with an
// execute bit.
func executable(fi os.FileInfo, err error) error {
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ErrNotInstalled
		}
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%w: %s", ErrNotExecutable, fi.Name())
	}
	return nil
}

// Open opens for reading the file p that Resolve returned, as the sandbox
// will see it: inside root when root is not empty (its links resolved
// inside root, as Resolve resolves them), else on the host.
func Open(root, p string) (*os.File, error) {
	if root == "" {
		return os.Open(p)
	}
	return openInRootForReading(root, p)
}
