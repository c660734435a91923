package initproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloneSourcesChecksRealPath hands the init's bind step, past every
// check of the parent, paths that reach /run through a symbolic link in a
// component: the init refuses each, by the real path of what it opened.
// A link as the last component is recreated, not followed, and a plain
// tree is cloned.
func TestCloneSourcesChecksRealPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (open_tree of a host tree)")
	}
	run, err := os.MkdirTemp("/run", "airlock-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(run)
	if err := os.Mkdir(run+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "airlock-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	link := filepath.Join(dir, "lock")
	if err := os.Symlink(run, link); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{
		{ReadOnly: []string{link + "/sub"}},
		{ReadWrite: []string{link + "/sub"}},
		{Binds: []Bind{{Host: link + "/sub", Inside: "/srv/x"}}},
	} {
		s := &initState{cfg: cfg}
		srcs, err := s.cloneSources()
		closeSources(srcs)
		if err == nil || !strings.Contains(err.Error(), "its real path is "+run+"/sub") {
			t.Errorf("%+v: err = %v, want the real path refused", cfg, err)
		}
	}
	s := &initState{cfg: Config{ReadOnly: []string{link, "/usr"}}}
	srcs, err := s.cloneSources()
	defer closeSources(srcs)
	// Sorted parents first: /usr, then the longer link path.
	if err != nil || len(srcs) != 2 || srcs[0].tree < 0 || srcs[1].link != run {
		t.Fatalf("sources %+v, err %v: want the link recreated and /usr cloned", srcs, err)
	}
}

func closeSources(srcs []mountSource) {
	for _, m := range srcs {
		if m.tree >= 0 {
			unix.Close(m.tree)
		}
	}
}
