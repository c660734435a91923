// Package workload runs what a coding agent does in one session, end to
// end, through airlock's command line: a Python package (a venv, pip
// install from a package index, unittest), a Node package (npm install
// from a registry, npm test) and a Go module (go test, a module proxy),
// each with an edit, and checks that the session's patch holds exactly
// the edit: it applies with git apply to a fresh copy of the original and
// gives the tree the edit gives. The index, the registry and the module
// proxy are the test's own, built from files it writes, served on the
// host's loopback (127.0.0.2, which the sandbox reaches only through its
// proxy and the task's allowlist) or, for Go, a file:// proxy in the
// workspace (Go's client never sends a loopback address to a proxy).
//
// With WORKLOAD_BENCH=1 (bench/workload/run.sh) each workload's steps also
// run directly, before the session and after it, in an environment like
// the sandbox's (a fresh HOME and caches), and the test logs the session's
// time, the direct runs' mean and their ratio.
package workload

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// searchPath is the policy's commandSearchPath: the host's Go toolchain
// where it is installed (/usr/local/go, inside the default view's /usr),
// then the system's.
var searchPath = []string{"/usr/local/go/bin", "/usr/local/bin", "/usr/bin", "/bin"}

// policyJSON is the policy of every workload: one tool, "agent", whose
// scripts are decided command by command (the shell rule), its bare
// programs, and the project's own programs by glob. %s is the task's
// allowlist entry, the test's server.
const policyJSON = `{
  "commandSearchPath": ["/usr/local/go/bin", "/usr/local/bin", "/usr/bin", "/bin"],
  "toolScopes": {"agent": {
    "caps": {"wallSeconds": 600, "cpuSeconds": 600, "memoryMb": 1536, "processCount": 128},
    "allow": [
      {"name": "sh", "command": "sh", "shell": true},
      {"name": "python3", "command": "python3", "allowExtraArgs": true},
      {"name": "venv", "command": "/workspace/.venv/bin/*", "allowExtraArgs": true},
      {"name": "npm", "command": "npm", "allowExtraArgs": true},
      {"name": "node-bin", "command": "/workspace/node_modules/.bin/*", "allowExtraArgs": true},
      {"name": "go", "command": "go", "allowExtraArgs": true},
      {"name": "built", "command": "/workspace/bin/*", "allowExtraArgs": true},
      {"name": "cat", "command": "cat", "allowExtraArgs": true},
      {"name": "sed", "command": "sed", "allowExtraArgs": true},
      {"name": "tail", "command": "tail", "allowExtraArgs": true}]}},
  "egress": {"taskAllowlist": {"deps": ["%s"]}},
  "session": {"memoryMb": 2048, "processCount": 256, "diskWriteMb": 2048}
}`

// A step is one command the agent sends, and what its standard output
// must hold. env is its --env entries; "{ws}" in one is the workspace's
// path (/workspace in the session).
type step struct {
	argv []string
	env  []string
	want string
}

// A workload is a project (its files, path to content), the steps of the
// agent's work on it, and the files as the edit among them leaves them
// (nil: deleted).
type workload struct {
	name   string
	needs  func(t *testing.T)
	files  map[string]string
	steps  []step
	edited map[string]*string
}

func TestWorkloads(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommands(t, "git")
	srv := newServer(t)
	workloads := []workload{pythonWorkload(srv), nodeWorkload(srv), goWorkload()}
	srv.serve(t) // its files written
	a := newAirlock(t, srv.addr)
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			w.needs(t)
			bench := os.Getenv("WORKLOAD_BENCH") == "1"
			var before []time.Duration
			if bench {
				before = runDirect(t, w)
			}
			a.laps = nil
			patch, manifest := a.runSession(t, w)
			checkPatch(t, w, patch, manifest)
			if bench {
				// Direct runs before and after, so that a drift of the
				// host's load or caches weighs on both sides.
				direct := slices.Concat(before, runDirect(t, w))
				d, s := sum(direct)/2, sum(a.laps)
				t.Logf("seconds of each step directly (before, after) %s; in the session (start, steps, stop) %s", secs(direct), secs(a.laps))
				t.Logf("workload %s: direct %.2fs, in a session %.2fs: %.2fx", w.name, d.Seconds(), s.Seconds(), s.Seconds()/d.Seconds())
			}
		})
	}
}

// pythonWorkload: a venv made with --copies (its python a file of the
// tree, as a workspace program must be), pip install from the test's
// simple index, unittest, an edit by a here-document and a new test file,
// unittest again. .venv is in the project's .gitignore.
func pythonWorkload(srv *server) workload {
	wheel := zipOf(map[string]string{
		"slugify_lite/__init__.py":              "def slug(s):\n    return '-'.join(s.lower().split())\n",
		"slugify_lite-1.0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: slugify-lite\nVersion: 1.0.0\n",
		"slugify_lite-1.0.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: airlock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"slugify_lite-1.0.0.dist-info/RECORD": "slugify_lite/__init__.py,,\nslugify_lite-1.0.0.dist-info/METADATA,,\n" +
			"slugify_lite-1.0.0.dist-info/WHEEL,,\nslugify_lite-1.0.0.dist-info/RECORD,,\n",
	}, "")
	const name = "slugify_lite-1.0.0-py3-none-any.whl"
	sum := sha256.Sum256(wheel)
	srv.files["/simple/slugify-lite/"] = []byte(fmt.Sprintf("<!DOCTYPE html>\n<a href=\"/files/%s#sha256=%x\">%s</a>\n", name, sum, name))
	srv.files["/files/"+name] = wheel
	title := "from slugify_lite import slug\n\n\ndef title_slug(title):\n    return slug(title.strip())\n"
	testStrip := "import unittest\n\nfrom title import title_slug\n\n\nclass TestStrip(unittest.TestCase):\n" +
		"    def test_strip(self):\n        self.assertEqual(title_slug(\" A b \"), \"a-b\")\n"
	return workload{
		name:  "python",
		needs: func(t *testing.T) { requirePythonVenv(t) },
		files: map[string]string{
			".gitignore":        ".venv/\n",
			"requirements.txt":  "slugify-lite\n",
			"src/title.py":      "from slugify_lite import slug\n\n\ndef title_slug(title):\n    return slug(title)\n",
			"src/test_title.py": "import unittest\n\nfrom title import title_slug\n\n\nclass TestTitle(unittest.TestCase):\n    def test_slug(self):\n        self.assertEqual(title_slug(\"Hello World\"), \"hello-world\")\n",
		},
		steps: []step{
			{argv: []string{"python3", "-m", "venv", "--copies", ".venv"}},
			{argv: []string{".venv/bin/pip", "install", "--index-url", "http://" + srv.addr + "/simple/", "-r", "requirements.txt"},
				want: "Successfully installed slugify-lite-1.0.0"},
			{argv: []string{"sh", "-c", ".venv/bin/python -m unittest discover -s src 2>&1 | tail -3"}, want: "\nOK\n"},
			{argv: []string{"sh", "-c", "cat > src/title.py <<'EOF'\n" + title + "EOF\ncat > src/test_strip.py <<'EOF'\n" + testStrip + "EOF"}},
			{argv: []string{"sh", "-c", "cd src && /workspace/.venv/bin/python -m unittest -q 2>&1 | tail -3"}, want: "Ran 2 tests"},
		},
		edited: map[string]*string{"src/title.py": &title, "src/test_strip.py": &testStrip},
	}
}

// nodeWorkload: npm install from the test's registry (the project's
// package-lock.json names it, as a committed lock does), npm test, the
// dependency's own program from node_modules/.bin (a link into its
// package), an edit with sed, npm test again. node_modules is in the
// project's .gitignore.
func nodeWorkload(srv *server) workload {
	tgz := tgzOf(map[string]string{
		"package/package.json": `{"name": "leftpad-lite", "version": "1.0.0", "main": "index.js", "bin": {"leftpad": "cli.js"}}` + "\n",
		"package/index.js":     "module.exports = (s, n) => String(s).padStart(n);\n",
		"package/cli.js":       "#!/usr/bin/env node\nconsole.log(require(\"./index.js\")(process.argv[2], Number(process.argv[3])));\n",
	})
	sha1sum, sha512sum := sha1.Sum(tgz), sha512.Sum512(tgz)
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:])
	tarball := "http://" + srv.addr + "/leftpad-lite/-/leftpad-lite-1.0.0.tgz"
	packument, _ := json.Marshal(map[string]any{
		"name": "leftpad-lite", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": "leftpad-lite", "version": "1.0.0", "main": "index.js", "bin": map[string]string{"leftpad": "cli.js"},
			"dist": map[string]string{"tarball": tarball, "shasum": hex.EncodeToString(sha1sum[:]), "integrity": integrity},
		}},
	})
	srv.files["/leftpad-lite"] = packument
	srv.files["/leftpad-lite/-/leftpad-lite-1.0.0.tgz"] = tgz
	fmtJS := "const pad = require(\"leftpad-lite\");\nmodule.exports = (s) => pad(s, 6);\n"
	testJS := "const assert = require(\"assert\");\nassert.strictEqual(require(\"./lib/fmt.js\")(\"ab\"), \"    ab\");\nconsole.log(\"ok\");\n"
	return workload{
		name:  "node",
		needs: func(t *testing.T) { testutil.RequireCommands(t, "node", "npm") },
		files: map[string]string{
			".gitignore":   "node_modules/\n",
			"package.json": `{"name": "app", "version": "1.0.0", "private": true, "scripts": {"test": "node test.js"}, "dependencies": {"leftpad-lite": "^1.0.0"}}` + "\n",
			"package-lock.json": `{
  "name": "app",
  "version": "1.0.0",
  "lockfileVersion": 3,
  "requires": true,
  "packages": {
    "": {
      "name": "app",
      "version": "1.0.0",
      "dependencies": {
        "leftpad-lite": "^1.0.0"
      }
    },
    "node_modules/leftpad-lite": {
      "version": "1.0.0",
      "resolved": "` + tarball + `",
      "integrity": "` + integrity + `",
      "bin": {
        "leftpad": "cli.js"
      }
    }
  }
}
`,
			"lib/fmt.js": "const pad = require(\"leftpad-lite\");\nmodule.exports = (s) => pad(s, 5);\n",
			"test.js":    "const assert = require(\"assert\");\nassert.strictEqual(require(\"./lib/fmt.js\")(\"ab\"), \"   ab\");\nconsole.log(\"ok\");\n",
		},
		steps: []step{
			{argv: []string{"npm", "install", "--registry", "http://" + srv.addr + "/"}, want: "added 1 package"},
			{argv: []string{"npm", "test"}, want: "\nok\n"},
			{argv: []string{"node_modules/.bin/leftpad", "ab", "4"}, want: "  ab\n"},
			{argv: []string{"sh", "-c", `sed -i 's/pad(s, 5)/pad(s, 6)/' lib/fmt.js && sed -i 's/"   ab"/"    ab"/' test.js && npm test`}, want: "\nok\n"},
		},
		edited: map[string]*string{"lib/fmt.js": &fmtJS, "test.js": &testJS},
	}
}

// goWorkload: a module depending on example.com/greet, which a module
// proxy in the workspace serves (GOPROXY=file://, given by --env), with
// the go.sum a project commits; go test, a build into bin/ and the
// program run from there (bin/ is in .gitignore), an edit with sed, go
// test again with the module cache alone (GOPROXY=off: /tmp/cache
// outlives a step).
func goWorkload() workload {
	const mod = "module example.com/greet\n\ngo 1.22\n"
	zipped := zipOf(map[string]string{
		"go.mod":   mod,
		"greet.go": "// Package greet greets.\npackage greet\n\n// Hello greets name.\nfunc Hello(name string) string { return \"Hello, \" + name }\n",
	}, "example.com/greet@v1.0.0/")
	zipHash, modHash := h1(zipped), h1Mod(mod)
	mainGo := "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/greet\"\n)\n\nfunc message() string { return greet.Hello(\"airlock\") }\n\nfunc main() { fmt.Println(message()) }\n"
	testGo := "package main\n\nimport \"testing\"\n\nfunc TestMessage(t *testing.T) {\n\tif got := message(); got != \"Hello, airlock\" {\n\t\tt.Fatalf(\"message() = %q\", got)\n\t}\n}\n"
	const proxy = ".goproxy/example.com/greet/@v/"
	return workload{
		name:  "go",
		needs: func(t *testing.T) { testutil.RequireCommands(t, "go") },
		files: map[string]string{
			".gitignore":          "bin/\n",
			"go.mod":              "module example.com/app\n\ngo 1.22\n\nrequire example.com/greet v1.0.0\n",
			"go.sum":              "example.com/greet v1.0.0 " + zipHash + "\nexample.com/greet v1.0.0/go.mod " + modHash + "\n",
			"main.go":             strings.Replace(mainGo, "airlock", "world", 1),
			"main_test.go":        strings.Replace(testGo, "airlock", "world", 1),
			proxy + "list":        "v1.0.0\n",
			proxy + "v1.0.0.info": `{"Version":"v1.0.0"}` + "\n",
			proxy + "v1.0.0.mod":  mod,
			proxy + "v1.0.0.zip":  string(zipped),
		},
		steps: []step{
			{argv: []string{"go", "test", "./..."}, env: []string{"GOPROXY=file://{ws}/.goproxy"}, want: "ok  \texample.com/app"},
			{argv: []string{"sh", "-c", "GOPROXY=off go build -o bin/app . && bin/app"}, want: "Hello, world\n"},
			{argv: []string{"sh", "-c", `sed -i 's/"world"/"airlock"/' main.go && sed -i 's/Hello, world/Hello, airlock/' main_test.go && GOPROXY=off go test ./...`},
				want: "ok  \texample.com/app"},
		},
		edited: map[string]*string{"main.go": &mainGo, "main_test.go": &testGo},
	}
}

// requirePythonVenv skips the test unless python3 can make a venv with
// pip (Debian's python3 needs python3-venv for that).
func requirePythonVenv(t *testing.T) {
	testutil.RequireCommands(t, "python3")
	if err := exec.Command("/usr/bin/python3", "-c", "import venv, ensurepip").Run(); err != nil {
		t.Skipf("needs /usr/bin/python3 with venv and ensurepip (Debian's python3-venv; CI installs it): %v", err)
	}
}

// airlock is the command line built from this tree, with its policy, an
// audit log and a private runtime directory.
type airlock struct {
	bin, policy, audit string
	env                []string
	laps               []time.Duration // of each command
}

func newAirlock(t *testing.T, serverAddr string) *airlock {
	dir := t.TempDir()
	a := &airlock{bin: filepath.Join(dir, "airlock"), policy: filepath.Join(dir, "policy.json"), audit: filepath.Join(dir, "audit.jsonl")}
	build := exec.Command("go", "build", "-o", a.bin, "github.com/airlock-sandbox/airlock/cmd/airlock")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as the README installs it
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.WriteFile(a.policy, fmt.Appendf(nil, policyJSON, serverAddr), 0o600); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	a.env = append(os.Environ(), "XDG_RUNTIME_DIR="+run, "XDG_STATE_HOME="+filepath.Join(dir, "state"), "AIRLOCK_POLICY=")
	return a
}

// cmd runs airlock with args and returns its standard output, failing
// the test on an exit status other than 0 or anything airlock itself
// says on stderr (an egress refusal, a notice).
func (a *airlock) cmd(t *testing.T, args ...string) string {
	t.Helper()
	c := exec.Command(a.bin, args...)
	c.Env = a.env
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	start := time.Now()
	err := c.Run()
	a.laps = append(a.laps, time.Since(start))
	if err != nil || strings.Contains(stderr.String(), "airlock:") {
		t.Fatalf("airlock %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// runSession runs w's steps in one session, as an agent sends them, and
// returns the patch and the manifest session stop gives.
func (a *airlock) runSession(t *testing.T, w workload) ([]byte, string) {
	ws := filepath.Join(t.TempDir(), "ws")
	writeTree(t, ws, w.files)
	id := strings.TrimSpace(a.cmd(t, "--policy", a.policy, "session", "start", "--workspace", ws, "--task", "deps", "--audit", a.audit))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			a.cmd(t, "session", "stop", id)
		}
	})
	for _, s := range w.steps {
		args := []string{"session", "exec", id, "--tool", "agent"}
		for _, e := range s.env {
			args = append(args, "--env", strings.ReplaceAll(e, "{ws}", "/workspace"))
		}
		if out := a.cmd(t, append(append(args, "--"), s.argv...)...); !strings.Contains(out, s.want) {
			t.Fatalf("%q: stdout does not hold %q:\n%s", s.argv, s.want, out)
		}
	}
	patch := filepath.Join(t.TempDir(), "agent.patch")
	manifest := a.cmd(t, "session", "stop", id, "--patch", patch, "--json")
	stopped = true
	data, err := os.ReadFile(patch)
	if err != nil {
		t.Fatal(err)
	}
	return data, manifest
}

// checkPatch checks that the patch names exactly the edited files, that
// git apply takes it on a fresh copy of the original, and that the tree
// it gives is the original with the edit.
func checkPatch(t *testing.T, w workload, patch []byte, manifest string) {
	var stop struct {
		Changes struct {
			Files []struct {
				Path string `json:"path"`
			} `json:"files"`
			Incomplete bool `json:"incomplete"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(manifest), &stop); err != nil {
		t.Fatalf("manifest: %v\n%s", err, manifest)
	}
	m := stop.Changes
	var got []string
	for _, f := range m.Files {
		got = append(got, f.Path)
	}
	if want := slices.Sorted(maps.Keys(w.edited)); !slices.Equal(got, want) || m.Incomplete {
		t.Fatalf("the patch changes %q (incomplete %v), want exactly the edit's %q:\n%s", got, m.Incomplete, want, patch)
	}
	dir := filepath.Join(t.TempDir(), "original")
	writeTree(t, dir, w.files)
	for _, args := range [][]string{{"apply", "--check", "-"}, {"apply", "-"}} {
		c := testutil.GitCmd(dir, args...)
		c.Stdin = bytes.NewReader(patch)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s\npatch:\n%s", args, err, out, patch)
		}
	}
	want := maps.Clone(w.files)
	for p, content := range w.edited {
		if content == nil {
			delete(want, p)
		} else {
			want[p] = *content
		}
	}
	if got := readTree(t, dir); !maps.Equal(got, want) {
		for p := range want {
			if got[p] != want[p] {
				t.Errorf("after git apply, %s is %q, want %q", p, got[p], want[p])
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("after git apply, %s is there, want no such file", p)
			}
		}
	}
}

// runDirect runs w's steps on the host, in a copy of the project, with
// the environment the sandbox gives (a fresh HOME and caches, the same
// search path, no proxy), and returns how long each took.
func runDirect(t *testing.T, w workload) []time.Duration {
	root := t.TempDir()
	if parent := os.Getenv("WORKLOAD_DIRECT_DIR"); parent != "" { // a tmpfs, as the sandbox's /workspace and /tmp are
		var err error
		if root, err = os.MkdirTemp(parent, "direct-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(root) })
	}
	ws, tmp := filepath.Join(root, "ws"), filepath.Join(root, "tmp")
	writeTree(t, ws, w.files)
	cache := filepath.Join(tmp, "cache")
	env := []string{"PATH=" + strings.Join(searchPath, ":"), "HOME=" + filepath.Join(tmp, "home"), "TMPDIR=" + tmp, "LANG=C.UTF-8",
		"XDG_CACHE_HOME=" + cache, "PIP_CACHE_DIR=" + cache + "/pip", "npm_config_cache=" + cache + "/npm",
		"GOCACHE=" + cache + "/go-build", "GOMODCACHE=" + cache + "/go-mod", "GOPATH=" + filepath.Join(tmp, "home", "go"),
		"PYTHONPYCACHEPREFIX=" + cache + "/pycache"}
	if err := os.MkdirAll(filepath.Join(tmp, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	var laps []time.Duration
	for _, s := range w.steps {
		name := s.argv[0]
		if !strings.Contains(name, "/") {
			for _, d := range searchPath {
				if _, err := os.Stat(filepath.Join(d, name)); err == nil {
					name = filepath.Join(d, name)
					break
				}
			}
		}
		c := exec.Command(name, s.argv[1:]...)
		c.Dir, c.Env = ws, slices.Clone(env)
		for _, e := range s.env {
			c.Env = append(c.Env, strings.ReplaceAll(e, "{ws}", ws))
		}
		// A script names the workspace as the sandbox shows it.
		if name == "sh" || strings.HasSuffix(name, "/sh") {
			c.Args[len(c.Args)-1] = strings.ReplaceAll(c.Args[len(c.Args)-1], "/workspace/", ws+"/")
		}
		start := time.Now()
		out, err := c.CombinedOutput()
		laps = append(laps, time.Since(start))
		if err != nil || !strings.Contains(string(out), s.want) {
			t.Fatalf("directly, %q: %v, want %q in:\n%s", s.argv, err, s.want, out)
		}
	}
	return laps
}

// secs lists laps in seconds.
func secs(laps []time.Duration) string {
	var b strings.Builder
	for _, l := range laps {
		fmt.Fprintf(&b, " %.2f", l.Seconds())
	}
	return "[" + strings.TrimSpace(b.String()) + "]"
}

func sum(laps []time.Duration) (total time.Duration) {
	for _, l := range laps {
		total += l
	}
	return total
}

// server serves files by path on 127.0.0.2: the host's loopback, not the
// sandbox's (127.0.0.1 inside is its own).
type server struct {
	ln    net.Listener
	addr  string
	files map[string][]byte
}

func newServer(t *testing.T) *server {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return &server{ln: ln, addr: ln.Addr().String(), files: map[string][]byte{}}
}

// serve serves s.files, which no longer change.
func (s *server) serve(t *testing.T) {
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := s.files[r.URL.Path]; ok && r.Method == http.MethodGet {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	})}
	go hs.Serve(s.ln)
	t.Cleanup(func() { hs.Close() })
}

// zipOf is a zip archive of files, each name after prefix.
func zipOf(files map[string]string, prefix string) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f, _ := z.Create(prefix + name)
		io.WriteString(f, files[name])
	}
	z.Close()
	return b.Bytes()
}

// tgzOf is a gzipped tar archive of files, each of mode 0755 (npm links
// a package's bin to its file).
func tgzOf(files map[string]string) []byte {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(files[name])), Typeflag: tar.TypeReg})
		io.WriteString(tw, files[name])
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

// h1 is go.sum's hash of a module's zip; h1Mod, of its go.mod.
func h1(zipped []byte) string {
	f, _ := os.CreateTemp("", "mod-*.zip")
	defer os.Remove(f.Name())
	f.Write(zipped)
	f.Close()
	h, _ := dirhash.HashZip(f.Name(), dirhash.Hash1)
	return h
}

func h1Mod(mod string) string {
	h, _ := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(mod)), nil })
	return h
}

// writeTree writes files under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree reads every regular file under dir, by its path from dir.
func readTree(t *testing.T, dir string) map[string]string {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
