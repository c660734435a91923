package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
)

// mode is path's permission bits with setuid, setgid and sticky, -1 when
// it cannot be read.
func mode(path string) os.FileMode {
	fi, err := os.Lstat(path)
	if err != nil {
		return 1<<32 - 1
	}
	return fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
}

// startRefused starts cfg and wants the start refused with an error
// naming want: nothing runs.
func startRefused(t *testing.T, cfg Config, want string) {
	t.Helper()
	s, err := Start(context.Background(), cfg)
	if err == nil {
		s.Kill()
		t.Fatalf("Start succeeded with findings %s; want it refused (%s)", cfg.Findings, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("Start: %v; want %q", err, want)
	}
}

// TestFindingsIntoCheckout is the attack of issue 11's finding 3: with
// --findings at a git checkout, the sandbox plants a hook that git runs
// on the host. The checkout is refused (it is not empty, and nothing is
// written into it); in a fresh directory a .git, a bare repository's HEAD
// and every exec bit arrive defused.
func TestFindingsIntoCheckout(t *testing.T) {
	testutil.RequireRoot(t)
	checkout := t.TempDir()
	os.MkdirAll(filepath.Join(checkout, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(checkout, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	script := `set -e
mkdir -p /findings/.git/hooks /findings/bare/objects /findings/bare/refs
printf '#!/bin/sh\ntouch /tmp/pwned\n' > /findings/.git/hooks/post-checkout
chmod 755 /findings/.git/hooks/post-checkout
echo 'ref: refs/heads/main' > /findings/bare/HEAD
echo report > /findings/run.sh
chmod 6755 /findings/run.sh`
	cfg := shellConfig(script)
	cfg.Findings = checkout
	startRefused(t, cfg, "not empty")
	if _, err := os.Lstat(filepath.Join(checkout, ".git", "hooks", "post-checkout")); err == nil {
		t.Fatal("the sandbox's hook reached the checkout")
	}

	out := filepath.Join(checkout, "out")
	cfg.Findings = out
	res, output, err := runWait(t, cfg)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("result %+v, %v, output %q", res, err, output)
	}
	for _, p := range []string{".git", "bare/HEAD"} {
		if _, err := os.Lstat(filepath.Join(out, p)); err == nil {
			t.Errorf("%s was copied out under its own name", p)
		}
	}
	hook := filepath.Join(out, ".git-renamed-by-airlock", "hooks", "post-checkout")
	if m := mode(hook); m != 0o644 {
		t.Errorf("the hook arrived with mode %v, want 0644 (data)", m)
	}
	if m := mode(filepath.Join(out, "run.sh")); m != 0o644 {
		t.Errorf("run.sh arrived with mode %v, want 0644 (no exec, setuid or setgid bit)", m)
	}
	if _, err := os.Stat(filepath.Join(out, "bare", "HEAD-renamed-by-airlock")); err != nil {
		t.Errorf("the bare repository's HEAD: %v", err)
	}
	report := strings.Join(res.FindingsSkipped, "\n")
	for _, w := range []string{".git: copied as .git-renamed-by-airlock", "bare/HEAD: copied as HEAD-renamed-by-airlock",
		"post-checkout: copied as data: mode 0755 became 0644", "run.sh: copied as data: mode 6755 became 0644"} {
		if !strings.Contains(report, w) {
			t.Errorf("report %q lacks %q", report, w)
		}
	}
}

// TestFindingsNeverWriteThrough plants, in the findings directory airlock
// made, what its owner could put there while the run goes on: a file, a
// hard link to a file outside, and symbolic links to a file and a
// directory outside. The copy-out writes through none of them, truncates
// nothing, and reports each entry it left out; the run's findings are not
// all kept (findings.ErrLost).
func TestFindingsNeverWriteThrough(t *testing.T) {
	testutil.RequireRoot(t)
	outside := t.TempDir()
	victim, victimLink, victimDir := filepath.Join(outside, "victim"), filepath.Join(outside, "victim2"), filepath.Join(outside, "dir")
	os.WriteFile(victim, []byte("untouched"), 0o644)
	os.WriteFile(victimLink, []byte("untouched"), 0o644)
	os.Mkdir(victimDir, 0o755)
	out := filepath.Join(t.TempDir(), "out")
	cfg := shellConfig(`for f in file hard link; do echo overwritten > /findings/$f; done
mkdir /findings/dir && echo planted > /findings/dir/x
echo kept > /findings/kept`)
	cfg.Findings = out
	var buf strings.Builder
	cfg.Stdout, cfg.Stderr = &buf, &buf
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out, "file"), []byte("host"), 0o644)
	os.Link(victim, filepath.Join(out, "hard"))
	os.Symlink(victimLink, filepath.Join(out, "link"))
	os.Symlink(victimDir, filepath.Join(out, "dir"))
	if err := s.Release(); err != nil {
		s.Kill()
		t.Fatal(err)
	}
	res, err := s.Wait()
	if !errors.Is(err, findings.ErrLost) {
		t.Fatalf("Wait: %v (output %q); want ErrFindingsLost", err, buf.String())
	}
	for p, want := range map[string]string{victim: "untouched", victimLink: "untouched", filepath.Join(out, "file"): "host", filepath.Join(out, "kept"): "kept\n"} {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s holds %q, want %q", p, b, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(victimDir, "x")); err == nil {
		t.Error("the copy wrote through a symbolic link to a directory")
	}
	if n := strings.Count(strings.Join(res.FindingsSkipped, "\n"), "not copied: the host's findings directory already has an entry of that name"); n != 4 {
		t.Errorf("report %q: want the 4 planted names left out", res.FindingsSkipped)
	}

	// Present before the run, the same entries make the directory not
	// empty: the run is refused before anything runs.
	cfg.Findings = out
	startRefused(t, cfg, "not empty")
}

// TestFindingsSymlinkedParent: a directory owned by uid 65534 holds a
// symbolic link into a directory only root may enter; --findings through
// the link must not make root write there. Without a link, findings made
// in that user's directory are given to that user.
func TestFindingsSymlinkedParent(t *testing.T) {
	testutil.RequireRoot(t)
	base := t.TempDir()
	user, rootOnly := filepath.Join(base, "user"), filepath.Join(base, "rootonly")
	os.Mkdir(user, 0o755)
	os.Chown(user, testutil.NobodyID, testutil.NobodyID)
	os.Mkdir(rootOnly, 0o700)
	os.Symlink(rootOnly, filepath.Join(user, "link"))
	cfg := shellConfig("echo report > /findings/r")
	cfg.Findings = filepath.Join(user, "link", "out")
	startRefused(t, cfg, "symbolic link")
	if _, err := os.Lstat(filepath.Join(rootOnly, "out")); err == nil {
		t.Fatal("root wrote through the user's symbolic link")
	}

	cfg.Findings = filepath.Join(user, "a", "out")
	if _, _, err := runWait(t, cfg); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "a/out", "a/out/r"} {
		fi, err := os.Lstat(filepath.Join(user, p))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != testutil.NobodyID {
			t.Errorf("%s belongs to uid %d, want %d (the owner of the directory it was made in)", p, st.Uid, testutil.NobodyID)
		}
	}
}

// TestFindingsSandboxRace: a process left inside swaps a directory of
// /findings for a link to /etc and back, without end. The copy runs once
// every process is dead, by descriptor and never through a link: nothing
// of the host's /etc comes out.
func TestFindingsSandboxRace(t *testing.T) {
	testutil.RequireRoot(t)
	out := filepath.Join(t.TempDir(), "out")
	cfg := shellConfig(`mkdir -p /findings/d && echo mine > /findings/d/passwd
(setsid sh -c 'while :; do mv /findings/d /findings/e; ln -s /etc /findings/d; rm /findings/d; mv /findings/e /findings/d; done' </dev/null >/dev/null 2>&1 &)
sleep 0.2`)
	cfg.Findings = out
	res, output, _ := runWait(t, cfg)
	if res.ExitCode != 0 {
		t.Fatalf("result %+v, output %q", res, output)
	}
	filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "root:") {
				t.Errorf("%s holds the host's /etc/passwd", p)
			}
		}
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s is a symbolic link on the host", p)
		}
		return nil
	})
}

// TestFindingsBadNames: names with control bytes or terminal escapes are
// left out, and the report shows them quoted, never raw.
func TestFindingsBadNames(t *testing.T) {
	testutil.RequireRoot(t)
	out := filepath.Join(t.TempDir(), "out")
	cfg := shellConfig(`echo x > "/findings/$(printf 'a\033]0;pwned\007')"; echo x > "/findings/$(printf 'b\nc')"; echo x > /findings/ok`)
	cfg.Findings = out
	res, output, err := runWait(t, cfg)
	if !errors.Is(err, findings.ErrLost) || res.ExitCode != 0 {
		t.Fatalf("result %+v, %v, output %q", res, err, output)
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 1 || ents[0].Name() != "ok" {
		t.Errorf("copied %v, want ok alone", ents)
	}
	report := strings.Join(res.FindingsSkipped, "|")
	if strings.ContainsAny(report+err.Error(), "\x1b\x07\n") || strings.Count(report, "control bytes") != 2 {
		t.Errorf("report %q, error %q: want both names left out, quoted", report, err)
	}
}

// TestFindingsDestRefused: a destination that will not do refuses the run
// before it starts (a file, ".", a non-empty directory), and a directory
// made for a run that then fails to start is removed again.
func TestFindingsDestRefused(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("keep"), 0o644)
	cfg := shellConfig("echo x > /findings/x")
	for p, want := range map[string]string{file: "not a directory", ".": "not empty", dir: "not empty", file + "/x": "not a directory"} {
		cfg.Findings = p
		startRefused(t, cfg, want)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("the file named as --findings changed: %q", b)
	}

	out := filepath.Join(dir, "new")
	cfg.Findings = out
	probes := ProbeRequest{CanaryFile: "/etc/hostname"} // readable inside: the probe fails
	cfg.Probes = &probes
	if s, err := Start(context.Background(), cfg); err == nil {
		s.Kill()
		t.Fatal("Start passed a failing probe")
	}
	if _, err := os.Lstat(out); err == nil {
		t.Error("the findings directory made for a run that never started was left behind")
	}
}

// testFindingsRootless is the copy-out as an unprivileged caller, whose
// files the sandbox's are on the host (TestRootlessInner): exec bits
// stripped, links left out, an unreadable file left out without stopping
// the rest, .git renamed.
func testFindingsRootless(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	cfg := shellConfig(`set -e
echo run > /findings/run.sh; chmod 755 /findings/run.sh
ln -s /etc/passwd /findings/link
echo secret > /findings/closed; chmod 000 /findings/closed
mkdir -p /findings/.git/hooks; echo hook > /findings/.git/hooks/post-checkout
echo kept > /findings/z`)
	cfg.Findings = out
	res, output, err := runWait(t, cfg)
	if !errors.Is(err, findings.ErrLost) || res.ExitCode != 0 {
		t.Fatalf("result %+v, %v, output %q", res, err, output)
	}
	if m := mode(filepath.Join(out, "run.sh")); m != 0o644 {
		t.Errorf("run.sh arrived with mode %v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "z")); string(b) != "kept\n" {
		t.Errorf("z holds %q: the copy stopped at the unreadable file", b)
	}
	for _, p := range []string{"link", ".git", "closed"} {
		if _, err := os.Lstat(filepath.Join(out, p)); err == nil {
			t.Errorf("%s was copied out", p)
		}
	}
	if _, err := os.Stat(filepath.Join(out, ".git-renamed-by-airlock", "hooks", "post-checkout")); err != nil {
		t.Errorf("the renamed .git: %v", err)
	}
	if n := strings.Count(strings.Join(res.FindingsSkipped, "\n"), "not copied"); n != 2 {
		t.Errorf("report %q: want the link and the unreadable file left out", res.FindingsSkipped)
	}
}
