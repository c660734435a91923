package changes

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// gitPathNames are names git takes for .git or .gitmodules on NTFS or
// HFS+, and their near misses.
var gitPathNames = []string{
	".git", ".GIT", ".Git", ".git.", ".git ", ".git. . ", ".git:x", ".git::$INDEX_ALLOCATION", ".git . x", ".gitx", ".git~1",
	"git~1", "GIT~1", "git~1.", "git~1:y", "git~2", "git~1x", "git", "a.git", `x\.git`, `x\.git:y`, `x\git~1`, `.git\x`,
	`x\.gitx`, ".g\u200cit", "\u200c.git", ".git\u200d", ".gi\ufefft", ".g\u200cit\u200c", ".g\u200bit", ".git\xff", ".gi\xfft",
	".git\uffff", ".git\ufffe", ".git\u00e9", ".gitmodules", ".GITMODULES", ".gitmodules.", ".gitmodules :x", ".gitmodules:x",
	".gitmodules x", "gitmod~1", "GITMOD~4", "gitmod~5", "gi7eba~1", "gi7eb~12", "gi7e~123", "gi~12345", "~1234567", "~0234567",
	"g~1a3456", "gi7eba~9", "gi7ebb~1", "gi7eba~1x", "gitmod~1:x", ".gitmodulesx", ".g\u200citmodules", `x\.gitmodules`,
	`x\gitmod~1`, ".gitignore", ".gitattributes", ".mailmap", "gi250a~1", "maba30~1", ".github", "ok", "gitmodules",
}

// TestGitRefusesAsGit checks gitRefuses against the installed git apply
// (with core.protectNTFS and core.protectHFS on) for each name of
// gitPathNames, as a file and as a link, alone, in a directory and as a
// directory.
func TestGitRefusesAsGit(t *testing.T) {
	testutil.RequireCommands(t, "git")
	for _, n := range gitPathNames {
		for _, p := range []string{n, "d/" + n, n + "/f"} {
			for _, link := range []bool{false, true} {
				checkAsGit(t, p, link)
			}
		}
	}
}

// FuzzGitRefusesAsGit checks gitRefuses against git apply for any path.
func FuzzGitRefusesAsGit(f *testing.F) {
	testutil.RequireCommands(f, "git")
	for _, n := range gitPathNames[:8] {
		f.Add("d/"+n, true)
	}
	f.Fuzz(func(t *testing.T, p string, link bool) {
		if !validPath(p) || len(p) > 1024 {
			t.Skip()
		}
		for _, e := range strings.Split(p, "/") {
			if len(e) > 255 {
				t.Skip()
			}
		}
		checkAsGit(t, p, link)
	})
}

// checkAsGit checks that gitRefuses refuses p when git apply does, and
// only then but for its wider rule.
func checkAsGit(t *testing.T, p string, link bool) {
	t.Helper()
	var b bytes.Buffer
	writeGitHeader(&b, p, p)
	if link {
		_, blob := hashes([]byte("t"))
		writeLine(&b, "new file mode", ModeSymlink.String())
		writeLine(&b, "index", zeroID+".."+blob)
		if err := writeText(&b, "", p, nil, []byte("t"), 1); err != nil {
			t.Fatal(err)
		}
	} else {
		_, blob := hashes(nil)
		writeLine(&b, "new file mode", ModeFile.String())
		writeLine(&b, "index", zeroID+".."+blob)
	}
	dir := t.TempDir()
	patch := filepath.Join(dir, "p.patch")
	if err := os.WriteFile(patch, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := testutil.GitCmd(work, "-c", "core.protectNTFS=true", "-c", "core.protectHFS=true", "apply", "--check", patch).CombinedOutput()
	refused := err != nil
	if refused && !bytes.Contains(out, []byte("invalid path")) {
		t.Fatalf("git apply of %q (link %v) fails otherwise: %v\n%s\n%s", p, link, err, out, b.Bytes())
	}
	why := gitRefuses(p, link)
	switch {
	case refused && why != refusedDotGit && why != refusedLink:
		t.Errorf("git apply refuses %q (link %v), gitRefuses says %q", p, link, why)
	case !refused && why != "" && why != refusedLinkWide:
		t.Errorf("git apply takes %q (link %v), gitRefuses says %q", p, link, why)
	}
}
