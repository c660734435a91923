package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/sandbox/hostpath"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// validID reports whether id is 1 to 48 letters, digits, '.', '_' or
// '-'. A loop rather than a regexp: a package-level regexp is compiled in
// every process that links this package, and each sandbox start runs two
// of them (airlock and the re-executed init).
func validID(id string) bool {
	if len(id) == 0 || len(id) > 48 || id == "." || id == ".." {
		return false
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// sandboxDirs are the inside paths the sandbox makes itself: no Bind may
// land at or under them.
var sandboxDirs = []string{"/proc", "/dev", TmpDir, WorkspaceDir, FindingsDir, "/.airlock"}

// normalize checks cfg and fills in its defaults. It is one list of small
// checks, each with a fixed wording.
func normalize(cfg Config) (Config, error) {
	if cfg.Path == "" || !path.IsAbs(cfg.Path) || path.Clean(cfg.Path) != cfg.Path {
		return cfg, fmt.Errorf("sandbox: path %q: want a clean absolute path (the command gate resolves it)", cfg.Path)
	}
	if err := checkTree(cfg.Tree, cfg.Path); err != nil {
		return cfg, err
	}
	if len(cfg.Args) == 0 {
		cfg.Args = []string{cfg.Path}
	}
	if cfg.Dir == "" {
		cfg.Dir = WorkspaceDir
	}
	if !path.IsAbs(cfg.Dir) {
		return cfg, fmt.Errorf("sandbox: dir %q: want an absolute path inside the sandbox", cfg.Dir)
	}
	return normalizeView(cfg)
}

// checkTree checks a workspace program's tree: none, or WorkspaceDir or
// TmpDir holding p.
func checkTree(tree, p string) error {
	if tree != "" && (tree != WorkspaceDir && tree != TmpDir || !strings.HasPrefix(p, tree+"/")) {
		return fmt.Errorf("sandbox: tree %q: want %s or %s, holding the path %q", tree, WorkspaceDir, TmpDir, p)
	}
	return nil
}

// normalizeView checks and fills in everything of cfg but the command:
// what a single run and a session share.
func normalizeView(cfg Config) (Config, error) {
	if cfg.Hostname == "" {
		cfg.Hostname = "airlock"
	}
	if cfg.ID == "" {
		var b [8]byte
		rand.Read(b[:])
		cfg.ID = hex.EncodeToString(b[:])
	}
	if !validID(cfg.ID) {
		return cfg, fmt.Errorf("sandbox: id %q: use 1 to 48 letters, digits, '.', '_' or '-'", cfg.ID)
	}
	if err := cfg.Caps.Validate(); err != nil {
		return cfg, fmt.Errorf("sandbox: %w", err)
	}
	for _, w := range cfg.Weaker {
		if !slices.Contains(WeakerModes(), w) {
			return cfg, fmt.Errorf("sandbox: weaker mode %q: unknown (known: %s)", w, strings.Join(WeakerModes(), ", "))
		}
	}
	if cfg.Root != "" {
		if err := checkRoot(cfg); err != nil {
			return cfg, err
		}
	} else if cfg.ReadOnly == nil {
		cfg.ReadOnly = defaultReadOnly
	}
	if err := checkHostPaths(cfg); err != nil {
		return cfg, fmt.Errorf("sandbox: %w", err)
	}
	if err := checkPrivate(cfg); err != nil {
		return cfg, fmt.Errorf("sandbox: %w", err)
	}
	for _, b := range cfg.Binds {
		if b.Host == initproc.SelfExe && b.Inside != SelfPath {
			return cfg, fmt.Errorf("sandbox: bind of the calling binary at %q: it goes at %s", b.Inside, SelfPath)
		}
		if b.Host == initproc.SelfExe {
			continue
		}
		if !path.IsAbs(b.Inside) || path.Clean(b.Inside) != b.Inside || b.Inside == "/" {
			return cfg, fmt.Errorf("sandbox: bind at %q: want a clean absolute path inside", b.Inside)
		}
		if under(b.Inside, sandboxDirs) {
			return cfg, fmt.Errorf("sandbox: bind at %q: inside a directory the sandbox makes", b.Inside)
		}
	}
	for _, p := range cfg.Hide {
		if !path.IsAbs(p) || path.Clean(p) != p {
			return cfg, fmt.Errorf("sandbox: hide %q: want a clean absolute path", p)
		}
	}
	return cfg, nil
}

// checkRoot refuses a Root that is not a clean absolute path, that would
// show the host's own root or kernel interfaces, or that comes with a
// ReadOnly list (which it replaces).
func checkRoot(cfg Config) error {
	r := cfg.Root
	switch {
	case !path.IsAbs(r) || path.Clean(r) != r:
		return fmt.Errorf("sandbox: root %q: want a clean absolute path", r)
	case r == "/":
		return errors.New("sandbox: root \"/\": refusing the host's own root (use ReadOnly to show host directories)")
	case hostpath.Under(r):
		return fmt.Errorf("sandbox: root %q: refusing it (it exposes the host's kernel interfaces or sockets)", r)
	case cfg.ReadOnly != nil:
		return fmt.Errorf("sandbox: root %q with a ReadOnly list: the root replaces the read-only host paths; set one of them", r)
	}
	return nil
}

// checkHostPaths refuses a host path the sandbox may not show on its
// words (package hostpath). Its real path and its place among the host's
// mounts are checked by the init on the tree it opens, at bind time; a
// policy's paths were checked the same way when it was loaded.
func checkHostPaths(cfg Config) error {
	for _, p := range cfg.ReadOnly {
		if err := hostpath.CheckWords("readOnly", p); err != nil {
			return err
		}
	}
	for _, p := range cfg.ReadWrite {
		if err := hostpath.CheckWords("readWrite", p); err != nil {
			return err
		}
	}
	for _, b := range cfg.Binds {
		if b.Host == initproc.SelfExe {
			continue
		}
		if err := hostpath.CheckBindWords(b.Host); err != nil {
			return err
		}
	}
	return nil
}

// under reports whether p is one of dirs or below one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
