package macbox

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"golang.org/x/sys/unix"
)

// TestMain doubles as the memory hog the memory cap is tested with.
func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv("MACBOX_HOG_MB")); err == nil {
		var keep [][]byte
		for i := 0; i < n; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		time.Sleep(10 * time.Second)
		runtime.KeepAlive(keep)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var testCaps = limits.Caps{Wall: 20 * time.Second, CPU: 20 * time.Second, MemoryBytes: 1 << 30, Tasks: 64,
	DiskWriteBytes: 16 << 20, OpenFiles: 200, OutputBytes: 1 << 20}

func stepCaps() Caps {
	return Caps{Wall: testCaps.Wall, CPU: testCaps.CPU, MemoryBytes: testCaps.MemoryBytes, Tasks: testCaps.Tasks}
}

// newBox makes a box with a workspace of two files, and removes it at
// the test's end.
func newBox(t *testing.T, original bool) *Box {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "dir", "b.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{ID: "t", Workspace: ws, Original: original, SearchPath: []string{"/usr/bin", "/bin"},
		ReadOnly: []string{"/usr", "/bin"}, Caps: testCaps, ProxyPort: 4321, Platform: linuxPlatform()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func run(t *testing.T, b *Box, script string, caps Caps) (Outcome, string) {
	t.Helper()
	var out bytes.Buffer
	r, err := b.Start(Command{Path: "/bin/sh", Args: []string{"sh", "-c", script},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=/workspace", "TMPDIR=/tmp"}, Stdout: &out, Stderr: &out, Caps: caps})
	if err != nil {
		t.Fatal(err)
	}
	return r.Wait(), out.String()
}

func TestRunInTheCopies(t *testing.T) {
	b := newBox(t, false)
	o, out := run(t, b, `pwd; echo "$HOME $TMPDIR $HTTPS_PROXY"; cat a.txt; readlink link; ls -l dir/b.sh | cut -c1-10; ulimit -n; ulimit -t; ulimit -f`, stepCaps())
	if o.ExitCode != 0 || o.KilledBy != "" {
		t.Fatalf("outcome %+v: %s", o, out)
	}
	want := strings.Join([]string{b.Workspace, b.Workspace + " " + b.Tmp + " http://127.0.0.1:4321", "one", "two", "a.txt", "-rwxr-xr-x",
		"200", "20", strconv.Itoa(16 << 20 / 512)}, "\n") + "\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if fi, err := os.Stat(b.Root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the box's directory: %v %v", fi.Mode(), err)
	}
}

func TestStartFails(t *testing.T) {
	b := newBox(t, false)
	_, err := b.Start(Command{Path: "/nonexistent/program", Caps: stepCaps()})
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Start of a missing program: %v", err)
	}
}

// TestKillsWhatIsLeft: a process left in the background, in the
// command's group or a session of its own while its parent lives, is
// killed when the command ends.
func TestKillsWhatIsLeft(t *testing.T) {
	testutil.SkipShort(t, "waits on processes left behind")
	b := newBox(t, false)
	o, out := run(t, b, `sleep 100 & echo $!; setsid sleep 100 & echo $!; sleep 0.5`, stepCaps())
	if o.ExitCode != 0 || len(o.Survivors) > 0 {
		t.Fatalf("outcome %+v", o)
	}
	for _, f := range strings.Fields(out) {
		pid, _ := strconv.Atoi(f)
		if pid == 0 || alive(pid) {
			t.Errorf("process %s left alive", f)
		}
	}
}

func TestCaps(t *testing.T) {
	testutil.SkipShort(t, "lets each cap trip, for seconds")
	b := newBox(t, false)
	for _, c := range []struct {
		name, script string
		caps         func(*Caps)
		want         limits.KilledBy
	}{
		{"wall", "sleep 100 & sleep 100", func(c *Caps) { c.Wall = 300 * time.Millisecond }, limits.KilledByWall},
		{"tasks", "for i in 1 2 3 4 5 6 7 8; do sleep 10 & done; wait", func(c *Caps) { c.Tasks = 4 }, limits.KilledByPids},
		{"cpu", "while :; do :; done", func(c *Caps) { c.CPU = time.Second }, limits.KilledByCPU},
		{"disk by the watch", "for i in 1 2 3 4 5 6 7 8 9 10; do head -c 2000000 /dev/zero > f$i; done; sleep 5", nil, limits.KilledByDisk},
		{"disk by RLIMIT_FSIZE", "exec head -c 20000000 /dev/zero > big", nil, limits.KilledByDisk},
	} {
		t.Run(c.name, func(t *testing.T) {
			caps := stepCaps()
			if c.caps != nil {
				c.caps(&caps)
			}
			start := time.Now()
			o, out := run(t, b, c.script, caps)
			if o.KilledBy != c.want {
				t.Errorf("killed by %q, want %q (outcome %+v, output %q)", o.KilledBy, c.want, o, out)
			}
			if time.Since(start) > 8*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			os.RemoveAll(b.Workspace)
			os.Mkdir(b.Workspace, 0o700)
		})
	}
}

func TestMemoryCap(t *testing.T) {
	testutil.SkipShort(t, "touches hundreds of MiB")
	b := newBox(t, false)
	b.cfg.Binds = []Bind{{Host: b.cfg.Platform.Self, Inside: "/.airlock/self"}}
	caps := stepCaps()
	caps.MemoryBytes = 64 << 20
	r, err := b.Start(Command{Path: "/.airlock/self", Env: []string{"MACBOX_HOG_MB=400"}, Caps: caps})
	if err != nil {
		t.Fatal(err)
	}
	o := r.Wait()
	if o.KilledBy != limits.KilledByMemory || o.PeakMemoryBytes <= 64<<20 {
		t.Errorf("outcome %+v", o)
	}
}

// TestProbesSeeNoSandbox runs the start-up probes where nothing confines
// the command (Linux, no Seatbelt): every check of confinement fails, so
// a Mac whose profile did not hold would refuse the run.
func TestProbesSeeNoSandbox(t *testing.T) {
	b := newBox(t, false)
	home := t.TempDir()
	canary := filepath.Join(t.TempDir(), "canary")
	os.WriteFile(canary, []byte("x"), 0o600)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A descriptor airlock inherited without close-on-exec: the launcher
	// keeps it from the command (stdio_only).
	leak, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leak)
	res := b.Probe(b.ProbeChecks(home, canary, lis.Addr().String()), ProbeCaps(stepCaps()))
	got := map[string]bool{}
	for _, r := range res {
		got[r.Name] = r.OK
		if r.Detail == "" {
			t.Errorf("probe %s without detail", r.Name)
		}
	}
	want := map[string]bool{"home": false, "ssh": true, "write_home": false, "canary_file": false, "write_box": false,
		"write_tmp": true, "write_workspace": true, "canary_addr": false, "stdio_only": true}
	for name, ok := range want {
		if v, seen := got[name]; !seen || v != ok {
			t.Errorf("probe %s: ok %v (seen %v), want %v: %+v", name, v, seen, ok, res)
		}
	}
}

func TestChangesApplyWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	b := newBox(t, true)
	o, out := run(t, b, `echo three >> a.txt; echo new > new.txt; rm dir/b.sh; ln -s /etc/passwd pw; chmod +x a.txt`, stepCaps())
	if o.ExitCode != 0 {
		t.Fatalf("%+v %s", o, out)
	}
	p, err := b.Changes(changes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The patch applies with git to a copy of the original and gives the
	// workspace as it is.
	dir := t.TempDir()
	if err := copyTree(b.orig, filepath.Join(dir, "w"), b.budget()); err != nil {
		t.Fatal(err)
	}
	patch := filepath.Join(dir, "p")
	os.WriteFile(patch, p.Diff, 0o600)
	cmd := exec.Command("git", "apply", "--unsafe-paths", patch)
	cmd.Dir = filepath.Join(dir, "w")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v: %s\n%s", err, out, p.Diff)
	}
	if a, err := os.ReadFile(filepath.Join(dir, "w", "a.txt")); err != nil || string(a) != "one\ntwo\nthree\n" {
		t.Errorf("a.txt after the patch: %q %v", a, err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "w", "pw")); err != nil || l != "/etc/passwd" {
		t.Errorf("link after the patch: %q %v", l, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "w", "dir", "b.sh")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b.sh after the patch: %v", err)
	}
}

func TestFindingsCopyOut(t *testing.T) {
	b := newBox(t, false)
	o, out := run(t, b, `cd /tmp && cd `+b.Findings+` && mkdir -p .git/hooks sub && echo x > report.txt && echo y > sub/run.sh && chmod 4755 sub/run.sh && ln -s /etc/passwd link && mkfifo fifo`, stepCaps())
	if o.ExitCode != 0 {
		t.Fatalf("%+v %s", o, out)
	}
	dst := filepath.Join(t.TempDir(), "new", "findings")
	d, err := findings.OpenDest(dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	src, err := unix.Open(b.Findings, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(src)
	report, err := d.CopyOut(src, 1<<20)
	if !errors.Is(err, findings.ErrLost) {
		t.Errorf("copy-out with a link and a fifo left out: %v", err)
	}
	joined := strings.Join(report, "\n")
	for _, w := range []string{"link: not copied: a symbolic link", "fifo: not copied: a fifo", ".git: copied as .git-renamed-by-airlock",
		"sub/run.sh: copied as data: mode 4755 became 0644"} {
		if !strings.Contains(joined, w) {
			t.Errorf("report lacks %q:\n%s", w, joined)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "report.txt")); err != nil || string(b) != "x\n" {
		t.Errorf("report.txt: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "sub", "run.sh")); err != nil || fi.Mode() != 0o644 {
		t.Errorf("run.sh: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(dst, ".git-renamed-by-airlock", "hooks")); err != nil {
		t.Errorf("the renamed .git: %v", err)
	}
}

func TestInsideAndEnv(t *testing.T) {
	b := &Box{Workspace: "/box/w", Tmp: "/box/t", Findings: "/box/f", cfg: Config{Binds: []Bind{{Host: "/h/ca.pem", Inside: "/run/airlock/ca-bundle.pem"}}}}
	for in, want := range map[string]string{"/workspace": "/box/w", "/workspace/x/y": "/box/w/x/y", "/workspaces": "/workspaces",
		"/tmp": "/box/t", "/findings/r": "/box/f/r", "/usr/bin/x": "/usr/bin/x", "/run/airlock/ca-bundle.pem": "/h/ca.pem"} {
		if got := b.Inside(in); got != want {
			t.Errorf("Inside(%s) = %s, want %s", in, got, want)
		}
	}
	got := b.Env([]string{"HOME=/workspace", "SSL_CERT_FILE=/run/airlock/ca-bundle.pem", "X=workspace", "NOEQ", "P=/tmp/a:/tmp/b"})
	want := []string{"HOME=/box/w", "SSL_CERT_FILE=/h/ca.pem", "X=workspace", "NOEQ", "P=/box/t/a:/box/t/b"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %v, want %v", got, want)
	}
}

// TestWorkspaceProgram: a program in the workspace runs when its real
// path lies there, and not when a link leads it out.
func TestWorkspaceProgram(t *testing.T) {
	b := newBox(t, false)
	os.WriteFile(filepath.Join(b.Workspace, "tool.sh"), []byte("#!/bin/sh\necho tool ran\n"), 0o755)
	os.Symlink("tool.sh", filepath.Join(b.Workspace, "inside"))
	os.Symlink("/bin/true", filepath.Join(b.Workspace, "outside"))
	os.WriteFile(filepath.Join(b.Workspace, "plain"), []byte("x"), 0o644)
	var out bytes.Buffer
	r, err := b.Start(Command{Path: "/workspace/inside", Tree: WorkspaceDir, Stdout: &out, Caps: stepCaps()})
	if err != nil {
		t.Fatal(err)
	}
	if o := r.Wait(); o.ExitCode != 0 || out.String() != "tool ran\n" || b.Name(r.Program) != "/workspace/tool.sh" {
		t.Errorf("outcome %+v, output %q, program %s", o, out.String(), b.Name(r.Program))
	}
	for p, want := range map[string]string{"/workspace/outside": "leaves its tree", "/workspace/plain": "not an executable"} {
		if _, err := b.Start(Command{Path: p, Tree: WorkspaceDir, Caps: stepCaps()}); !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
}
