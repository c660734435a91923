package changes

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// headerLines keeps a patch's header lines: everything but hunks and
// binary data, whose bytes depend on the diff algorithm and zlib.
func headerLines(patch string) []string {
	var out []string
	for _, l := range strings.Split(patch, "\n") {
		for _, p := range []string{"diff --git ", "--- ", "+++ ", "index ", "new file mode ", "deleted file mode ",
			"old mode ", "new mode ", "similarity index ", "rename from ", "rename to ", "GIT binary patch"} {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// TestHeadersMatchGit compares every header line of a patch with the one
// git itself writes for the same change (git diff --full-index --binary
// -M100%): names quoted the same way, the same modes, object names and
// renames.
func TestHeadersMatchGit(t *testing.T) {
	testutil.RequireCommands(t, "git")
	orig := map[string]node{
		"sp ace": file("1\n"), "q\"uote": file("2\n"), "back\\slash": file("3\n"), "tab\there": file("4\n"),
		"new\nline": file("5\n"), "caf\u00e9": file("6\n"), "ctl\x01\x1f\x7f": file("7\n"), "dir with space/f": file("8\n"),
		"trailing ": file("9\n"), "mode.sh": file("m\n"), "both.sh": file("b\n"), "bin": file("a\x00b"),
		"gone bin": file(randomBytes(7, 100)), "l": link("t"), "tc": file("tc\n"), "moved": file("moved content\n"),
		"del\u00e9": file("d\n"),
	}
	mod := map[string]node{
		"sp ace": file("1!\n"), "q\"uote": file("2!\n"), "back\\slash": file("3!\n"), "tab\there": file("4!\n"),
		"new\nline": file("5!\n"), "caf\u00e9": file("6!\n"), "ctl\x01\x1f\x7f": file("7!\n"), "dir with space/f": file("8!\n"),
		"trailing ": file("9!\n"), "mode.sh": execFile("m\n"), "both.sh": execFile("B\n"), "bin": file("a\x00c"),
		"l": link("u v"), "tc": link("tc"), "moved \"there\"": file("moved content\n"), "added \u00fc": file("new\n"),
		"added bin": file(randomBytes(8, 70)), "empty": file(""),
	}
	origDir, modDir := writeTree(t, orig), writeTree(t, mod)
	p := diffDirs(t, origDir, modDir, Limits{})

	repo := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("cp", "-a", origDir, repo).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := testutil.GitCmd(repo, args...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	run("init", "-q", ".")
	run("add", "-A")
	run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "orig")
	ents, _ := os.ReadDir(repo)
	for _, e := range ents {
		if e.Name() != ".git" {
			os.RemoveAll(filepath.Join(repo, e.Name()))
		}
	}
	if out, err := exec.Command("cp", "-a", modDir+"/.", repo).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	run("add", "-A")
	want := headerLines(run("diff", "--cached", "--full-index", "--binary", "-M100%"))
	got := headerLines(string(p.Diff))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("header lines differ from git's\n got:\n%s\n\nwant (git diff):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	checkApplies(t, origDir, modDir, p)
}
