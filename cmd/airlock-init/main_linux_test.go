package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestMain removes the binaries the tests build.
func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveBinaries()
	os.Exit(code)
}

// policy lets the tool "t" run cat with any arguments.
const policy = `{"toolScopes": {"t": {"allow": [{"name": "cat", "command": "/bin/cat", "allowExtraArgs": true}]}},
"egress": {"default": "deny", "taskAllowlist": {}}}`

// run is one "airlock run" of cat /proc/1/status: what the run printed,
// its receipt's init, and its exit status.
type run struct {
	stdout, stderr, init string
	code                 int
}

// airlockRun runs bin (an airlock binary) as run describes, as the user
// cred (nil: the caller), in a fresh directory of its own.
func airlockRun(t *testing.T, bin string, cred *syscall.Credential) run {
	t.Helper()
	dir := t.TempDir()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(pol, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		os.Chown(pol, int(cred.Uid), int(cred.Gid))
	}
	res := filepath.Join(dir, "r.json")
	cmd := exec.Command(bin, "run", "--policy", pol, "--tool", "t", "--audit", filepath.Join(dir, "audit.jsonl"),
		"--result", res, "--", "/bin/cat", "/proc/1/status")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_STATE_HOME=" + dir, "XDG_RUNTIME_DIR=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := run{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	if err != nil && r.code < 0 {
		t.Fatalf("airlock run: %v\n%s", err, stderr.String())
	}
	var out struct {
		Receipt map[string]string `json:"receipt"`
	}
	if b, err := os.ReadFile(res); err == nil {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("result: %v", err)
		}
	}
	r.init = out.Receipt["init"]
	return r
}

// vmExe is pid 1's VmExe in the status a run printed, in bytes.
func vmExe(t *testing.T, status string) uint64 {
	t.Helper()
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, "VmExe:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmExe %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmExe in pid 1's status:\n%s", status)
	return 0
}

// textSize is the size of the executable segment of the ELF file at path,
// which is what the kernel shows as VmExe of a process running it.
func textSize(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			return p.Memsz
		}
	}
	t.Fatalf("%s has no executable segment", path)
	return 0
}

// checkInit fails t unless the status r printed is of a pid 1 running
// the binary at want (its text segment's size, to the page), not the
// other one.
func checkInit(t *testing.T, r run, want, other string) {
	t.Helper()
	got, w, o := vmExe(t, r.stdout), textSize(t, want), textSize(t, other)
	near := func(a, b uint64) bool { return a+2*4096 >= b && b+2*4096 >= a }
	if !near(got, w) || near(got, o) {
		t.Errorf("pid 1's VmExe is %d bytes; %s's text is %d, %s's %d", got, want, w, other, o)
	}
}

// TestSmallInitRuns shows that airlock runs airlock-init from beside its
// binary as the sandbox's init: the receipt says so, and pid 1 inside is
// that small program, not airlock's binary (its text segment). Without
// airlock-init beside it, airlock runs itself, and says that.
func TestSmallInitRuns(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.Binaries(t)
	bin, small := filepath.Join(dir, "airlock"), filepath.Join(dir, sandbox.SmallInit)
	r := airlockRun(t, bin, nil)
	if r.code != 0 {
		t.Fatalf("airlock run: exit %d\n%s", r.code, r.stderr)
	}
	if want := "pid 1 run from airlock-init (small, beside the binary): " + small + ";"; !strings.HasPrefix(r.init, want) {
		t.Errorf("receipt's init = %q, want it to start %q", r.init, want)
	}
	checkInit(t, r, small, bin)
	if out, err := exec.Command(bin, "doctor").Output(); !strings.Contains(string(out), "Init: airlock-init (small, beside the binary): "+small+", of this build\n") {
		t.Errorf("airlock doctor (%v) does not name the small init:\n%s", err, out)
	}

	// The same binary with nothing beside it runs itself.
	alone := filepath.Join(t.TempDir(), "airlock")
	if err := os.Link(bin, alone); err != nil {
		t.Fatal(err)
	}
	r = airlockRun(t, alone, nil)
	if want := "pid 1 run from airlock itself (no airlock-init beside it);"; r.code != 0 || !strings.HasPrefix(r.init, want) {
		t.Errorf("alone: exit %d, receipt's init = %q, want it to start %q\n%s", r.code, r.init, want, r.stderr)
	}
	checkInit(t, r, bin, small)
}

// TestSmallInitRootless is TestSmallInitRuns's first claim for a rootless
// caller: root's airlock-init beside root's airlock is trusted, and runs.
func TestSmallInitRootless(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.Binaries(t)
	r := airlockRun(t, filepath.Join(dir, "airlock"), &syscall.Credential{Uid: testutil.NobodyID, Gid: testutil.NobodyID, Groups: []uint32{}})
	if r.code != 0 {
		t.Fatalf("airlock run as nobody: exit %d\n%s", r.code, r.stderr)
	}
	small := filepath.Join(dir, sandbox.SmallInit)
	if want := "pid 1 run from airlock-init (small, beside the binary): " + small + ";"; !strings.HasPrefix(r.init, want) {
		t.Errorf("receipt's init = %q, want it to start %q", r.init, want)
	}
	checkInit(t, r, small, filepath.Join(dir, "airlock"))
}

// TestSmallInitRefused shows that an airlock-init that another user could
// have written or placed is not run: airlock runs itself instead, and the
// receipt and doctor say why.
func TestSmallInitRefused(t *testing.T) {
	testutil.RequireRoot(t)
	built := testutil.Binaries(t)
	for _, tc := range []struct {
		name string
		// spoil makes dir's airlock-init (a copy) untrusted.
		spoil func(t *testing.T, dir, small string)
		want  string
	}{
		{"group-writable", func(t *testing.T, _, small string) { chmod(t, small, 0o775) },
			"is group- or world-writable (mode 0775)"},
		{"world-writable", func(t *testing.T, _, small string) { chmod(t, small, 0o757) },
			"is group- or world-writable (mode 0757)"},
		{"another user's", func(t *testing.T, _, small string) {
			if err := os.Chown(small, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, "it is owned by uid 4242, not by airlock's owner (uid 0) or root"},
		{"symbolic link", func(t *testing.T, _, small string) {
			real := filepath.Join(t.TempDir(), sandbox.SmallInit)
			if err := os.Rename(small, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, small); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link, not the file itself"},
		{"directory group-writable", func(t *testing.T, dir, _ string) { chmod(t, dir, 0o775) },
			"its directory DIR is group- or world-writable (mode 0775)"},
		{"not executable", func(t *testing.T, _, small string) { chmod(t, small, 0o644) },
			"is not executable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, bin, small := besides(t, built)
			tc.spoil(t, dir, small)
			r := airlockRun(t, bin, nil)
			if r.code != 0 {
				t.Fatalf("airlock run: exit %d\n%s", r.code, r.stderr)
			}
			want := "pid 1 run from airlock itself (airlock-init beside it refused: "
			why := strings.ReplaceAll(tc.want, "DIR", dir)
			if !strings.HasPrefix(r.init, want) || !strings.Contains(r.init, why) {
				t.Errorf("receipt's init = %q, want %q ... %q", r.init, want, why)
			}
			checkInit(t, r, bin, filepath.Join(built, sandbox.SmallInit))
			out, _ := exec.Command(bin, "doctor").Output()
			if !strings.Contains(string(out), "Init: airlock itself (airlock-init beside it refused: ") || !strings.Contains(string(out), why) {
				t.Errorf("airlock doctor does not say why:\n%s", out)
			}
		})
	}
}

// TestSmallInitOtherBuild shows that an airlock-init built from other
// sources (here: another digest of them) refuses to be the init, and
// that airlock then fails closed with a clear error rather than run an
// init that may apply an older filter; doctor says so too.
func TestSmallInitOtherBuild(t *testing.T) {
	testutil.RequireRoot(t)
	dir, bin, small := besides(t, testutil.Binaries(t))
	gen, err := filepath.Abs("../../sandbox/internal/initproc/sources_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	other := filepath.Join(tmp, "sources_gen.go")
	if err := os.WriteFile(other, bytes.Replace(src, []byte(`"sha256:`), []byte(`"sha256:0`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {gen: other}})
	if err := os.WriteFile(filepath.Join(tmp, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(small)
	cmd := exec.Command("go", "build", "-overlay", filepath.Join(tmp, "overlay.json"), "-o", small, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the other airlock-init: %v\n%s", err, out)
	}
	r := airlockRun(t, bin, nil)
	if r.code != 125 || !strings.Contains(r.stderr, sandbox.ErrOtherBuild.Error()) {
		t.Errorf("airlock run with an airlock-init of another build: exit %d, want 125 and %q\n%s", r.code, sandbox.ErrOtherBuild, r.stderr)
	}
	if strings.Contains(r.stdout, "VmExe") {
		t.Errorf("the target ran:\n%s", r.stdout)
	}
	out, _ := exec.Command(bin, "doctor").Output()
	if want := "Init: none: runs fail: " + sandbox.ErrOtherBuild.Error(); !strings.Contains(string(out), want) {
		t.Errorf("airlock doctor does not say %q (dir %s):\n%s", want, dir, out)
	}
}

// besides is a directory of its own with airlock (a link to built's) and
// a copy of airlock-init, which a test may spoil.
func besides(t *testing.T, built string) (dir, bin, small string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, small = filepath.Join(dir, "airlock"), filepath.Join(dir, sandbox.SmallInit)
	if err := os.Link(filepath.Join(built, "airlock"), bin); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(built, sandbox.SmallInit))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(small, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin, small
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestSmallInitAfterUpgrade: a long-lived airlock (here airlock mcp)
// whose binary is replaced under it (an upgrade installs a new build
// beside a new airlock-init) runs itself as the init of the sandboxes it
// starts from then on, and says why, rather than the airlock-init beside
// the new binary, which may be of the other build.
func TestSmallInitAfterUpgrade(t *testing.T) {
	testutil.RequireRoot(t)
	dir, bin, _ := besides(t, testutil.Binaries(t))
	work := t.TempDir()
	pol := filepath.Join(work, "policy.json")
	if err := os.WriteFile(pol, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--policy", pol, "--audit", filepath.Join(work, "audit.jsonl"))
	cmd.Dir, cmd.Stderr = work, os.Stderr
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + work, "XDG_STATE_HOME=" + work, "XDG_RUNTIME_DIR=" + work}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "upgrade", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The upgrade: a new file renamed over the running binary's path.
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "airlock.new"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "airlock.new"), bin); err != nil {
		t.Fatal(err)
	}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t", Arguments: map[string]any{"command": "/bin/cat", "args": []string{"/proc/1/status"}}})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ExitCode int               `json:"exitCode"`
		Receipt  map[string]string `json:"receipt"`
	}
	j, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(j, &res); err != nil {
		t.Fatal(err)
	}
	if want := "pid 1 run from airlock itself (its binary was replaced or removed since it started"; r.IsError || res.ExitCode != 0 || !strings.HasPrefix(res.Receipt["init"], want) {
		t.Errorf("after the upgrade: exit %d, receipt's init %q, want it to start %q", res.ExitCode, res.Receipt["init"], want)
	}
}
