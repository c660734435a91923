package seatbelt

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
)

// Input is what one command's profile is made from: host paths, as the
// sandbox has them from the command gate and the policy.
type Input struct {
	// Program is the resolved program.
	Program string
	// Programs are more programs that may be executed: airlock's own
	// binary, for the start-up probes (their profile only).
	Programs []string
	// SearchPath is the policy's command search path.
	SearchPath []string
	// ReadOnly are the policy's readOnly trees.
	ReadOnly []string
	// Write are the writable trees: the session's copies and the
	// policy's readWrite.
	Write []string
	// Hide are the host files no process may reach.
	Hide []string
	// ProxyPort is the proxy's loopback port, 0 for none.
	ProxyPort int
	// Trustd is set by the weaker mode WeakerTrustd.
	Trustd bool
}

// MaxDirEntries bounds the entries Prepare reads in one directory of the
// search path.
const MaxDirEntries = 8192

// Prepare works out the Spec of in on this host: each path by its name
// and its real path; the real paths of the search path's links (a
// Homebrew bin directory is links into its Cellar, and Seatbelt checks
// an exec against the real path); the set-id programs in the search path;
// and the ancestors of every tree. A path that does not exist is kept by
// its name (it matches nothing). It fails when the program itself is
// set-id, or when a directory of the search path is larger than
// MaxDirEntries.
func Prepare(in Input) (Spec, error) {
	s := Spec{ProxyPort: in.ProxyPort, Trustd: in.Trustd}
	for _, p := range append([]string{in.Program}, in.Programs...) {
		if setID(p) {
			return Spec{}, fmt.Errorf("seatbelt: program %q is set-id: refused (it would run with another user's rights)", p)
		}
		s.ExecFiles = add(s.ExecFiles, names(p)...)
	}
	for _, d := range in.SearchPath {
		s.ExecTrees = add(s.ExecTrees, names(d)...)
	}
	for _, d := range s.ExecTrees {
		files, noExec, err := scanDir(d, s.ExecTrees)
		if err != nil {
			return Spec{}, err
		}
		s.ExecFiles = add(s.ExecFiles, files...)
		s.NoExec = add(s.NoExec, noExec...)
	}
	for _, p := range append(slices.Clone(in.ReadOnly), in.SearchPath...) {
		s.Read = add(s.Read, names(p)...)
	}
	for _, p := range in.Write {
		s.Write = add(s.Write, names(p)...)
	}
	for _, p := range in.Hide {
		s.Hide = add(s.Hide, names(p)...)
	}
	for _, group := range [][]string{s.ExecFiles, s.ExecTrees, s.Read, s.Write} {
		for _, p := range group {
			s.Traverse = add(s.Traverse, ancestors(p)...)
		}
	}
	return s, s.Check()
}

// names returns p and, when it differs and exists, its real path.
func names(p string) []string {
	p = path.Clean(p)
	real, err := filepath.EvalSymlinks(p)
	if err != nil || real == p {
		return []string{p}
	}
	return []string{p, real}
}

// ancestors returns the directories above p, "/" excluded.
func ancestors(p string) []string {
	var out []string
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		out = append(out, d)
	}
	return out
}

// add appends the entries of vs that s lacks.
func add(s []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

// setID reports whether p is (or links to) a set-user-id or
// set-group-id file.
func setID(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0
}

// scanDir reads one directory of the search path: the real paths of its
// links to programs outside the search path's trees, and its set-id
// programs (by the name in it and their real path). A directory that is
// not there, or not a directory, holds nothing.
func scanDir(dir string, trees []string) (files, noExec []string, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, nil, nil
	}
	defer f.Close()
	ents, err := f.ReadDir(MaxDirEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, nil
	}
	if len(ents) > MaxDirEntries {
		return nil, nil, fmt.Errorf("seatbelt: search path directory %q holds more than %d entries", dir, MaxDirEntries)
	}
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue
			}
			if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() && !within(real, trees) {
				files = append(files, real)
			}
		}
		if setID(p) {
			noExec = add(noExec, names(p)...)
		}
	}
	return files, noExec, nil
}

// within reports whether p is one of dirs or below one.
func within(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || len(p) > len(d) && p[:len(d)] == d && p[len(d)] == '/' {
			return true
		}
	}
	return false
}
