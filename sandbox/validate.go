package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strings"
)

var idRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,48}$`)

// forbiddenBinds may never be bound in, nor anything under the first
// group: they hold the host's sockets (docker.sock, D-Bus, systemd), its
// kernel interfaces and its users' homes.
var (
	forbiddenTrees = []string{"/proc", "/sys", "/dev", "/run", "/var/run"}
	forbiddenExact = []string{"/", "/home", "/root", "/var", "/tmp", "/boot"}
	sandboxDirs    = []string{"/proc", "/dev", TmpDir, WorkspaceDir, FindingsDir, "/.airlock"}
)

// normalize checks cfg and fills in its defaults. It is one list of small
// checks, each with a fixed wording.
func normalize(cfg Config) (Config, error) {
	if cfg.Path == "" || !path.IsAbs(cfg.Path) || path.Clean(cfg.Path) != cfg.Path {
		return cfg, fmt.Errorf("sandbox: path %q: want a clean absolute path (the command gate resolves it)", cfg.Path)
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
	if cfg.Hostname == "" {
		cfg.Hostname = "airlock"
	}
	if cfg.ID == "" {
		var b [8]byte
		rand.Read(b[:])
		cfg.ID = hex.EncodeToString(b[:])
	}
	if !idRE.MatchString(cfg.ID) || cfg.ID == "." || cfg.ID == ".." {
		return cfg, fmt.Errorf("sandbox: id %q: use 1 to 48 letters, digits, '.', '_' or '-'", cfg.ID)
	}
	if err := cfg.Caps.Validate(); err != nil {
		return cfg, fmt.Errorf("sandbox: %w", err)
	}
	if cfg.ReadOnly == nil {
		cfg.ReadOnly = DefaultReadOnly
	}
	for _, p := range cfg.ReadOnly {
		if err := checkHostPath("readOnly", p); err != nil {
			return cfg, err
		}
	}
	for _, p := range cfg.ReadWrite {
		if err := checkHostPath("readWrite", p); err != nil {
			return cfg, err
		}
	}
	for _, b := range cfg.Binds {
		if b.Host != selfExe && (!path.IsAbs(b.Host) || path.Clean(b.Host) != b.Host || under(b.Host, forbiddenTrees)) {
			return cfg, fmt.Errorf("sandbox: bind %q: want a clean absolute host path outside /proc, /sys, /dev and /run", b.Host)
		}
		if b.Host == selfExe && b.Inside != SelfPath {
			return cfg, fmt.Errorf("sandbox: bind of the calling binary at %q: it goes at %s", b.Inside, SelfPath)
		}
		if b.Host == selfExe {
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

// checkHostPath refuses a bind of a path that would expose the host.
func checkHostPath(field, p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("sandbox: %s %q: want a clean absolute path", field, p)
	}
	for _, f := range forbiddenExact {
		if p == f {
			return fmt.Errorf("sandbox: %s %q: refusing to bind it (it exposes the host's homes, sockets or state)", field, p)
		}
	}
	if under(p, forbiddenTrees) {
		return fmt.Errorf("sandbox: %s %q: refusing to bind it (it exposes the host's kernel interfaces or sockets)", field, p)
	}
	if under(p, []string{TmpDir, WorkspaceDir, FindingsDir, "/.airlock"}) {
		return fmt.Errorf("sandbox: %s %q: the sandbox makes this directory itself (use Binds to show a host path elsewhere)", field, p)
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
