package testutil

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// PodmanFlags are this host's global podman flags: crun refuses the
// hybrid cgroups of these hosts, and systemd is not there to manage them.
const PodmanFlags = "--runtime runc --cgroup-manager cgroupfs"

// Podman runs podman for a test: rootful, or rootless as NobodyID with a
// home and image store of its own (vfs), which its cleanup removes with
// the rootless pause process podman leaves running.
type Podman struct {
	// Rootless is set for NobodyID's podman.
	Rootless bool
	home     string
}

// RootfulPodman is root's podman.
func RootfulPodman(t testing.TB) *Podman {
	t.Helper()
	RequirePodman(t)
	return &Podman{}
}

// RootlessPodman is NobodyID's podman, in a fresh home.
func RootlessPodman(t testing.TB) *Podman {
	t.Helper()
	RequirePodman(t)
	home := SharedDir(t, "airlock-podman-")
	if err := os.Chown(home, NobodyID, NobodyID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	p := &Podman{Rootless: true, home: home}
	t.Cleanup(p.stopPause)
	return p
}

// stopPause kills the pause process a rootless podman starts to hold its
// user namespace, by the pid it wrote.
func (p *Podman) stopPause() {
	b, err := os.ReadFile(filepath.Join(p.home, "run", "libpod", "tmp", "pause.pid"))
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Command is podman with this host's flags and args.
func (p *Podman) Command(args ...string) *exec.Cmd {
	flags := strings.Fields(PodmanFlags)
	if !p.Rootless {
		return exec.Command("podman", append(flags, args...)...)
	}
	cmd := exec.Command("podman", append(append(flags, "--storage-driver", "vfs"), args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + p.home, "XDG_RUNTIME_DIR=" + filepath.Join(p.home, "run")}
	cmd.Dir = p.home
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NobodyID, Gid: NobodyID, Groups: []uint32{}}}
	return cmd
}

// Run runs podman with args and returns its output; it fails t on an
// error.
func (p *Podman) Run(t testing.TB, args ...string) string {
	t.Helper()
	if p.Rootless {
		if err := os.MkdirAll(filepath.Join(p.home, "run"), 0o700); err == nil {
			os.Chown(filepath.Join(p.home, "run"), NobodyID, NobodyID)
		}
	}
	out, err := p.Command(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Import makes an image of the tar archive at path (readable by the
// podman's user), tagged tag, and returns its digest-pinned reference; the
// image is removed at cleanup.
func (p *Podman) Import(t testing.TB, path, tag string) string {
	t.Helper()
	p.Run(t, "import", path, tag)
	t.Cleanup(func() { p.Command("rmi", "--force", tag).Run() })
	digest := strings.TrimSpace(p.Run(t, "image", "inspect", "--format", "{{.Digest}}", tag))
	name, _, _ := strings.Cut(tag, ":")
	return name + "@" + digest
}

// StaticAirlock builds airlock without cgo into dir, as a container's
// entrypoint is built, and returns its path.
func StaticAirlock(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "airlock")
	if out, err := staticBuild(bin, "github.com/airlock-sandbox/airlock/cmd/airlock"); err != nil {
		t.Fatalf("build airlock: %v\n%s", err, out)
	}
	return bin
}

// TarEntry is one entry of an image's root: a directory (Data nil and Dir
// set) or a file.
type TarEntry struct {
	Name     string
	Dir      bool
	Mode     int64
	UID      int
	Data     []byte
	FromFile string // the file's content is this host file's
}

// WriteTar writes entries as a tar archive at path, readable by all.
func WriteTar(t testing.TB, path string, entries []TarEntry) {
	t.Helper()
	if err := os.WriteFile(path, tarOf(t, entries), 0o644); err != nil {
		t.Fatal(fmt.Errorf("write %s: %w", path, err))
	}
}

// tarOf is entries as a tar archive.
func tarOf(t testing.TB, entries []TarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: e.Mode, Uid: e.UID, Gid: e.UID}
		data := e.Data
		if e.FromFile != "" {
			var err error
			if data, err = os.ReadFile(e.FromFile); err != nil {
				t.Fatal(err)
			}
		}
		if e.Dir {
			h.Typeflag, h.Name = tar.TypeDir, strings.TrimSuffix(e.Name, "/")+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
