package cmdgate_test

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/decision"
)

// FuzzDenyCoversTheKernelsSpellings checks the lexical comparison against
// the kernel's own path resolution: in a tree without links, every
// argument that the kernel resolves, from the step's working directory,
// to the file a deny or escalate rule names is refused by that rule. A
// temporary directory stands for the sandbox's root, openat2 with
// RESOLVE_IN_ROOT resolves in it as the sandbox would ("/.." is "/").
func FuzzDenyCoversTheKernelsSpellings(f *testing.F) {
	root := f.TempDir()
	dirs := []string{ws, ws + "/sub", ws + "/sub/deeper", ws + "/x", "/"}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, ".env"), nil, 0o644); err != nil {
			f.Fatal(err)
		}
	}
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { unix.Close(rootFD) })
	// resolve is the file the kernel opens for arg from dir, if any.
	resolve := func(dir, arg string) (os.FileInfo, bool) {
		if !path.IsAbs(arg) {
			arg = dir + "/" + arg
		}
		fd, err := unix.Openat2(rootFD, arg, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return nil, false
		}
		file := os.NewFile(uintptr(fd), arg)
		defer file.Close()
		fi, err := file.Stat()
		return fi, err == nil
	}
	g := gateFrom(f, pathPolicy)
	for _, seed := range []string{".env", "./.env", "/workspace/.env", "x/../.env", ".//.env", "sub/../.env",
		"sub/deeper/../../.env", "../workspace/.env", "/../../workspace/./.env", "../.env", "../../.env", "sub/.env", "..", ""} {
		for i := range dirs {
			f.Add(uint8(i), seed)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, arg string) {
		dir := dirs[int(which)%len(dirs)]
		if strings.IndexByte(arg, 0) >= 0 {
			return // no path; the gate denies it for its NUL
		}
		got, ok := resolve(dir, arg)
		if !ok {
			return
		}
		// "cat .env" is denied: the .env of the step's directory.
		if here, _ := resolve(dir, ".env"); os.SameFile(got, here) {
			if d := g.Decide("t", "cat", []string{arg}, dir); d.Verdict != decision.Deny || d.Rule != "no-env" {
				t.Errorf("from %s, %q is %s's .env but cat of it is %s %q", dir, arg, dir, d.Verdict, d.Reason)
			}
		}
		// "less /workspace/.env" is escalated, from anywhere.
		if env, _ := resolve("/", ws+"/.env"); os.SameFile(got, env) {
			if d := g.Decide("t", "less", []string{arg}, dir); d.Verdict != decision.Escalate || d.Rule != "env-ask" {
				t.Errorf("from %s, %q is /workspace/.env but less of it is %s %q", dir, arg, d.Verdict, d.Reason)
			}
		}
	})
}
