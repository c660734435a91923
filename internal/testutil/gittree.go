package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitCmd is git run in dir with no user or system configuration and no
// repository looked for above dir.
func GitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir), "LC_ALL=C"}
	return cmd
}

// DescribeTree lists every file and link under dir as git sees them —
// "file x=<owner's execute bit> <size> <SHA-256>", "link <target>", or
// "other <mode>" — leaving out the paths skip names and what is beneath
// them. Directories are implied by the paths, as they are for git; a dir
// that does not exist is an empty tree.
func DescribeTree(dir string, skip []string) (map[string]string, error) {
	out := map[string]string{}
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return out, nil
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		for _, s := range skip {
			if rel == s || strings.HasPrefix(rel, s+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		info, err := d.Info()
		if err != nil || rel == "." || info.IsDir() {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			out[rel] = "link " + l
			return err
		case info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file x=%v %d %s", info.Mode()&0o100 != 0, info.Size(), hex.EncodeToString(h.Sum(nil)))
		default:
			out[rel] = "other " + info.Mode().String()
		}
		return nil
	})
	return out, err
}
