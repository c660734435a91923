package seatbelt

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostTree makes a host tree like a Mac's under a temporary directory: a bin
// directory of programs, a set-id one among them, links into a "Cellar"
// beside it, and a link to the bin directory (as /etc is one to
// /private/etc).
func hostTree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write := func(p string, mode os.FileMode) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode.Perm()); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(root+"/bin/make", 0o755)
	write(root+"/bin/sudo", 0o755|os.ModeSetuid)
	write(root+"/bin/wall", 0o755|os.ModeSetgid)
	write(root+"/Cellar/gh/2.40/bin/gh", 0o755)
	write(root+"/Cellar/suid/1/bin/suid", 0o755|os.ModeSetuid)
	for name, target := range map[string]string{
		root + "/bin/gh":     "../Cellar/gh/2.40/bin/gh",
		root + "/bin/suidln": root + "/Cellar/suid/1/bin/suid",
		root + "/bin/dangle": root + "/nowhere",
		root + "/bin/local":  "make",
		root + "/linkedbin":  "bin",
		root + "/ws-link":    "private/ws",
		root + "/private/.k": "x",
	} {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(root+"/private/ws", 0o700); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestPrepare(t *testing.T) {
	root := hostTree(t)
	s, err := Prepare(Input{
		Program:    root + "/linkedbin/make",
		SearchPath: []string{root + "/linkedbin", root + "/missing"},
		ReadOnly:   []string{root + "/Cellar"},
		Write:      []string{root + "/ws-link"},
		Hide:       []string{root + "/Cellar/gh/2.40/bin/gh"},
		ProxyPort:  1234,
	})
	if err != nil {
		t.Fatal(err)
	}
	has := func(field string, list []string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(list, w) {
				t.Errorf("%s %v lacks %s", field, list, w)
			}
		}
	}
	lacks := func(field string, list []string, not ...string) {
		t.Helper()
		for _, n := range not {
			if slices.Contains(list, n) {
				t.Errorf("%s %v holds %s", field, list, n)
			}
		}
	}
	// The program and the search path by their names and real paths.
	has("ExecFiles", s.ExecFiles, root+"/linkedbin/make", root+"/bin/make")
	has("ExecTrees", s.ExecTrees, root+"/linkedbin", root+"/bin", root+"/missing")
	// A link to a program outside the search path: its real path; a
	// dangling link or one inside: nothing more.
	has("ExecFiles", s.ExecFiles, root+"/Cellar/gh/2.40/bin/gh")
	lacks("ExecFiles", s.ExecFiles, root+"/nowhere")
	// Set-id programs, by name and real path, however reached.
	has("NoExec", s.NoExec, root+"/bin/sudo", root+"/bin/wall", root+"/bin/suidln", root+"/Cellar/suid/1/bin/suid")
	lacks("NoExec", s.NoExec, root+"/bin/make", root+"/bin/gh")
	has("Read", s.Read, root+"/Cellar", root+"/linkedbin", root+"/bin")
	has("Write", s.Write, root+"/ws-link", root+"/private/ws")
	has("Hide", s.Hide, root+"/Cellar/gh/2.40/bin/gh")
	has("Traverse", s.Traverse, root, filepath.Dir(root), root+"/private")
	lacks("Traverse", s.Traverse, "/")
	if s.ProxyPort != 1234 || s.Trustd {
		t.Errorf("port %d, trustd %v", s.ProxyPort, s.Trustd)
	}
	if _, err := Profile(s); err != nil {
		t.Errorf("the prepared spec makes no profile: %v", err)
	}
}

func TestPrepareRefuses(t *testing.T) {
	root := hostTree(t)
	if _, err := Prepare(Input{Program: root + "/bin/sudo"}); err == nil || !strings.Contains(err.Error(), "set-id") {
		t.Errorf("a set-id program: %v", err)
	}
	if _, err := Prepare(Input{Program: root + "/bin/suidln"}); err == nil {
		t.Error("a link to a set-id program accepted")
	}
	if _, err := Prepare(Input{Program: root + "/bin/make", ReadOnly: []string{root + `/a"b`}}); err == nil {
		t.Error("a path with a quote accepted")
	}
	big := t.TempDir()
	for i := range MaxDirEntries + 1 {
		if err := os.WriteFile(fmt.Sprintf("%s/f%d", big, i), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Prepare(Input{Program: root + "/bin/make", SearchPath: []string{big}}); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a search path directory past the bound: %v", err)
	}
}
