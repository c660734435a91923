package conventions

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// debianPackage names, for every program a test looks for or runs, the
// Debian package that provides it ("" for one every Debian system has:
// Essential, or brought by Go or the test binary itself). A test that
// needs a program not listed fails here until it is added, with its
// package in .ci/run's apt-get line.
var debianPackage = map[string]string{
	"airlock": "", "go": "", "bash": "", "sh": "", "tar": "", "cp": "", "sleep": "", "timeout": "",
	"mkfifo": "", "ldd": "", "true": "", "cat": "",
	"curl":      "curl",
	"git":       "git",
	"python3":   "python3",
	"newgidmap": "uidmap",
	"make":      "make",
	"gcc":       "gcc",
	"node":      "nodejs",
	"npm":       "npm",
	"bwrap":     "bubblewrap",
	"ip":        "iproute2",
	"podman":    "podman",
	// Built from this repository (cmd/airlock-export), never installed.
	"airlock-export": "",
	// Not a Debian package: it comes with this kind of machine (see .ci/run);
	// export/k8s's kubectl test skips, saying so, where it is missing.
	"kubectl": "",
}

// needed are programs the tests need that no pattern below finds: gcc
// (and libc6-dev) for go test -race, which needs cgo; make and python3
// for the README's example plan, run by cmd/airlock's readme.txtar.
var needed = []string{"gcc", "make", "python3"}

// TestCIInstallsWhatTestsUse keeps .ci/run's apt-get line in step with
// the programs the tests look for (exec.LookPath, exec.Command,
// testscript's [exec:NAME]), so that a test never skips or fails on a
// fresh CI machine for want of one.
func TestCIInstallsWhatTestsUse(t *testing.T) {
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var installed []string
	for _, line := range regexp.MustCompile(`apt-get install [^\n]*`).FindAll(ci, -1) {
		installed = append(installed, strings.Fields(string(line))...)
	}
	if installed == nil {
		t.Fatal(".ci/run has no apt-get install line")
	}
	uses := regexp.MustCompile(`exec\.LookPath\("([^"]+)"\)|exec\.Command\("([^"]+)"|\[!?exec:([^\]]+)\]`)
	found := slices.Clone(needed)
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".txtar") || strings.Contains(path, "internal/testutil/")) ||
			strings.HasSuffix(path, "conventions/ci_test.go") || strings.HasPrefix(filepath.Base(path), "example_") {
			return nil // this file's own patterns; examples, which are compiled, never run
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, g := range uses.FindAllSubmatch(src, -1) {
			found = append(found, filepath.Base(string(g[1])+string(g[2])+string(g[3])))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range found {
		pkg, known := debianPackage[prog]
		switch {
		case !known:
			t.Errorf("a test uses %q: name its Debian package in debianPackage and install it in .ci/run", prog)
		case pkg != "" && !slices.Contains(installed, pkg):
			t.Errorf("a test uses %q, but .ci/run does not install %s", prog, pkg)
		}
	}
}
