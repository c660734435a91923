//go:build unix

package macbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// The inside paths the box maps onto its private directories.
const (
	WorkspaceDir = "/workspace"
	TmpDir       = "/tmp"
	FindingsDir  = "/findings"
)

// Platform is what a box needs of the system. The sandbox's darwin files
// give a Mac's: sandbox-exec and the kern.proc table with footprints.
// Tests give a Linux one, without Seatbelt.
type Platform struct {
	// Wrap returns the argv that executes argv under the profile in the
	// file profile (on a Mac: sandbox-exec -f profile argv...).
	Wrap func(profile string, argv []string) []string
	// Procs reads the calling user's processes, without footprints.
	Procs func() ([]seatbelt.Proc, error)
	// Footprint is a process's memory footprint in bytes, 0 when unknown.
	Footprint func(pid int) int64
	// Limits reads what the rlimit plan needs of the host.
	Limits func() seatbelt.HostLimits
	// Self is airlock's own binary, which launches every command and
	// runs the start-up probes.
	Self string
}

// Bind is a host file shown at another path: the box cannot mount it
// there, so a command's path and its environment's values that name
// Inside are rewritten to Host, which the profile lets it read.
type Bind struct {
	Host, Inside string
}

// Config is one box: a session's private directories and its view.
type Config struct {
	// ID names the box's directory.
	ID string
	// Workspace is a host directory copied in; "" starts it empty.
	Workspace string
	// Original keeps a copy of the workspace as copied in, for Changes.
	Original bool
	// SearchPath, ReadOnly, ReadWrite and Hide are the policy's view
	// (seatbelt.Input).
	SearchPath, ReadOnly, ReadWrite, Hide []string
	// Binds are files shown by their host path.
	Binds []Bind
	// Caps are the session's: the disk cap holds the copies together.
	Caps limits.Caps
	// ProxyPort is the proxy's port on loopback, 0 for no network.
	ProxyPort int
	// ProxyAuth is the user and token the proxy requires ("user:token").
	ProxyAuth string
	// Trustd allows trustd (seatbelt.WeakerTrustd).
	Trustd bool
	// Platform is the system's part.
	Platform Platform
}

// Box is the private directory of one session, mode 0700 in the
// temporary directory: the workspace copy, the scratch directory (the
// commands' /tmp), the findings directory, the original for Changes and
// each command's profile.
type Box struct {
	cfg                      Config
	Root                     string // real path, every link resolved
	Workspace, Tmp, Findings string
	orig, profiles           string
	entries                  int // how many entries the copies may hold
	copied                   bool
}

// New makes the box's directories and copies the workspace in (files up
// to the disk cap, entries up to one per 4 KiB of it, as on Linux).
func New(cfg Config) (*Box, error) {
	if p := cfg.Platform; p.Wrap == nil || p.Procs == nil || p.Footprint == nil || p.Limits == nil || p.Self == "" {
		return nil, errors.New("macbox: the platform is not complete")
	}
	dir, err := os.MkdirTemp("", "airlock-"+cfg.ID+"-")
	if err != nil {
		return nil, fmt.Errorf("macbox: the session's directory: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("macbox: the session's directory: %w", err)
	}
	b := &Box{cfg: cfg, Root: real, Workspace: real + "/workspace", Tmp: real + "/tmp", Findings: real + "/findings",
		orig: real + "/original", profiles: real + "/profiles", entries: int(max(cfg.Caps.DiskWriteBytes/4096, 1024))}
	for _, d := range []string{b.Workspace, b.Tmp, b.Findings, b.profiles} {
		if err := os.Mkdir(d, 0o700); err != nil {
			b.Close()
			return nil, fmt.Errorf("macbox: %w", err)
		}
	}
	if cfg.Workspace != "" {
		if err := b.CopyIn(cfg.Workspace); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// CopyIn copies the host directory dir into the workspace, once, and
// keeps the original when Config.Original says so: copied from the host
// into the original first, then from it into the workspace, so that the
// two agree whatever the host directory does meanwhile.
func (b *Box) CopyIn(dir string) error {
	if b.copied {
		return errors.New("macbox: the workspace was copied in already")
	}
	b.copied = true
	if !b.cfg.Original {
		return copyTree(dir, b.Workspace, b.budget())
	}
	if err := copyTree(dir, b.orig, b.budget()); err != nil {
		return err
	}
	return copyTree(b.orig, b.Workspace, b.budget())
}

// Inside maps a path as a command names it (the sandbox's /workspace,
// /tmp and /findings; a Bind's inside path) to the host path it is in
// the box, and leaves every other path as it is.
func (b *Box) Inside(p string) string { return b.translate(p, 0) }

// Name is the path a command names the host path p by: Inside's
// reverse, for the result's Path.
func (b *Box) Name(p string) string { return b.translate(p, 1) }

// translate maps p from one side of the box's pairs of paths (0 as a
// command names it, 1 as the host does) to the other; a bind's pair
// maps only the path itself.
func (b *Box) translate(p string, from int) string {
	to := 1 - from
	for _, m := range [][2]string{{WorkspaceDir, b.Workspace}, {TmpDir, b.Tmp}, {FindingsDir, b.Findings}} {
		if p == m[from] {
			return m[to]
		}
		if rest, ok := strings.CutPrefix(p, m[from]+"/"); ok {
			return path.Join(m[to], rest)
		}
	}
	for _, bd := range b.cfg.Binds {
		if m := [2]string{bd.Inside, bd.Host}; p == m[from] {
			return m[to]
		}
	}
	return p
}

// Env maps every absolute path in the values of env, each element of a
// colon-separated list, through Inside (HOME and TMPDIR name the box's
// directories, the CA bundle's variables a bound file). Arguments are
// never rewritten: what the command gate decided is what runs.
func (b *Box) Env(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			out[i] = kv
			continue
		}
		elems := strings.Split(v, ":")
		for j, e := range elems {
			if strings.HasPrefix(e, "/") {
				elems[j] = b.Inside(e)
			}
		}
		out[i] = k + "=" + strings.Join(elems, ":")
	}
	return out
}

// Close removes the box's directories.
func (b *Box) Close() error {
	if err := os.RemoveAll(b.Root); err != nil {
		return fmt.Errorf("macbox: remove the session's directory: %w", err)
	}
	return nil
}

// budget is what one copy of the workspace may take: the disk cap, and
// an entry per 4 KiB of it (the inodes of the Linux sandbox's tmpfs).
func (b *Box) budget() *budget {
	return &budget{bytes: b.cfg.Caps.DiskWriteBytes, entries: b.entries}
}

// writable are the trees a command may write.
func (b *Box) writable() []string {
	return append([]string{b.Workspace, b.Tmp, b.Findings}, b.cfg.ReadWrite...)
}

// profile writes the profile of a command whose program is program
// (with more programs allowed, for the probes) to a file of its own in
// the box, and returns its path.
func (b *Box) profile(name, program string, more ...string) (string, error) {
	in := seatbelt.Input{Program: program, Programs: more, SearchPath: b.cfg.SearchPath, ReadOnly: b.cfg.ReadOnly,
		Write: b.writable(), Hide: b.cfg.Hide, ProxyPort: b.cfg.ProxyPort, Trustd: b.cfg.Trustd}
	for _, bd := range b.cfg.Binds {
		in.ReadOnly = append(in.ReadOnly, bd.Host)
	}
	spec, err := seatbelt.Prepare(in)
	if err != nil {
		return "", err
	}
	text, err := seatbelt.Profile(spec)
	if err != nil {
		return "", err
	}
	file := filepath.Join(b.profiles, name+".sb")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		return "", fmt.Errorf("macbox: the profile: %w", err)
	}
	return file, nil
}
