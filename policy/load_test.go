package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// seedJSON is lab phases 1.2 and 3.1 as the seed prints them, merged.
const seedJSON = `{
  "toolScopes": {
    "run_tests": {
      "allow": [
        { "name": "pytest", "command": "pytest", "argPatterns": [["-v"], ["-v", "-x"]], "allowExtraArgs": false },
        { "name": "make-test", "command": "make", "argPatterns": [["test"], ["check"]], "allowExtraArgs": false }
      ]
    },
    "install_deps": {
      "allow": [
        { "name": "pip-install", "command": "pip", "argPatterns": [["install", "-r", "requirements.txt"]], "allowExtraArgs": false }
      ]
    },
    "read_file": {
      "allow": [
        { "name": "cat", "command": "cat", "argPatterns": [], "allowExtraArgs": true }
      ]
    }
  },
  "egress": {
    "default": "deny",
    "taskAllowlist": {
      "web_search": ["search.example-corp.net", "api.search.example-corp.net"],
      "fetch_docs": ["docs.spec.host"],
      "install_deps": ["registry-proxy.internal"]
    },
    "alwaysBlocked": ["169.254.169.254", "169.254.170.2", "metadata.google.internal"]
  }
}
`

func TestSeedPolicyLoadsUnchanged(t *testing.T) {
	if string(policy.Default().Data) != seedJSON {
		t.Fatal("the embedded default is not the seed's policy byte for byte")
	}
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(seedJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := policy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	def := policy.Default()
	if !reflect.DeepEqual(fromFile.Policy, def.Policy) || fromFile.Digest != def.Digest {
		t.Fatal("the seed loaded from a file differs from the embedded default")
	}
	if def.Source != policy.EmbeddedName || !strings.HasPrefix(def.Digest, "sha256:") {
		t.Fatalf("source %q digest %q", def.Source, def.Digest)
	}
	ts := def.ToolScopes["install_deps"].Allow[0]
	if ts.Name != "pip-install" || ts.Command != "pip" || !reflect.DeepEqual(ts.ArgPatterns, [][]string{{"install", "-r", "requirements.txt"}}) || ts.AllowExtraArgs {
		t.Fatalf("install_deps rule decoded wrongly: %+v", ts)
	}
	if got := def.Egress.AlwaysBlocked; len(got) != 3 || got[2] != "metadata.google.internal" {
		t.Fatalf("alwaysBlocked = %q", got)
	}
}

func TestDefaults(t *testing.T) {
	p := policy.Default().Policy
	want := policy.EffectiveCaps{WallSeconds: 10, CPUSeconds: 10, MemoryMB: 512, ProcessCount: 20, DiskWriteMB: 100, OpenFiles: 256, OutputMB: 16}
	if got := p.CapsFor("run_tests"); got != want {
		t.Errorf("default caps = %+v, want %+v", got, want)
	}
	if got := p.SearchPath(); !reflect.DeepEqual(got, []string{"/usr/local/bin", "/usr/bin", "/bin"}) {
		t.Errorf("search path = %q", got)
	}
	full, err := policy.Load("testdata/full.json")
	if err != nil {
		t.Fatal(err)
	}
	// Tool caps override field by field over the top-level caps.
	want = policy.EffectiveCaps{WallSeconds: 60, CPUSeconds: 30, MemoryMB: 1024, ProcessCount: 64, DiskWriteMB: 100, OpenFiles: 256, OutputMB: 16}
	if got := full.CapsFor("run_tests"); got != want {
		t.Errorf("run_tests caps = %+v, want %+v", got, want)
	}
	if got := full.FilesystemFor("run_tests").ReadOnly; !reflect.DeepEqual(got, []string{"/usr", "/etc"}) {
		t.Errorf("tool filesystem = %q", got)
	}
	if got := full.FilesystemFor("vcs").ReadOnly; len(got) != 5 {
		t.Errorf("top-level filesystem = %q", got)
	}
	// wallSeconds follows an overridden cpuSeconds when absent.
	l, err := policy.Parse("p.json", []byte(`{"toolScopes": {}, "caps": {"cpuSeconds": 2.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := l.CapsFor("x"); c.WallSeconds != 2.5 || c.CPUSeconds != 2.5 {
		t.Errorf("caps = %+v", c)
	}
}

func TestYAMLEqualsJSON(t *testing.T) {
	j, err := policy.Load("testdata/full.json")
	if err != nil {
		t.Fatal(err)
	}
	y, err := policy.Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(j.Policy, y.Policy) {
		t.Fatalf("YAML and JSON differ:\n%+v\n%+v", j.Policy, y.Policy)
	}
}

// TestStrictErrors checks that each malformed policy fails with the exact
// file:line:col, the field and a hint where there is one.
func TestStrictErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"p.json", `{"toolScopes": {"t": {"allow": [{"name": "x", "comand": "ls"}]}}}`,
			"p.json:1:47: toolScopes.t.allow[0].comand: unknown field \"comand\"\n\thint: did you mean \"command\"?"},
		{"p.json", `{"toolScopes": {}, "Caps": {}}`,
			"p.json:1:20: Caps: unknown field \"Caps\"\n\thint: did you mean \"caps\"?"},
		{"p.json", `{"toolScopes": {"t": {"allow": [{"name": "x", "command": "ls", "allowExtraArgs": "true"}]}}}`,
			"p.json:1:82: toolScopes.t.allow[0].allowExtraArgs: expected a boolean, found a string\n\thint: write true without quotes"},
		{"p.json", `{"toolScopes": {"t": {"allow": [{"name": "x", "command": "ls", "argPatterns": ["-v"]}]}}}`,
			"p.json:1:80: toolScopes.t.allow[0].argPatterns[0]: expected an array, found a string"},
		{"p.json", "{\n  \"toolScopes\": {},\n  \"toolScopes\": {}\n}",
			"p.json:3:3: duplicate key \"toolScopes\" (first at line 2, column 3)\n\thint: a key may appear once per object; merge the two entries"},
		{"p.json", `{"toolScopes": {}} {"toolScopes": {}}`,
			"p.json:1:20: trailing data after the policy object\n\thint: a policy file holds exactly one JSON object"},
		{"p.json", `{"toolScopes": {}, "caps": {"memoryMb": 1.5}}`,
			"p.json:1:41: caps.memoryMb: 1.5 is not an integer in range\n\thint: use a whole number"},
		{"p.json", `{"toolScopes": {}, "caps": {"memoryMb": 99999999999999999999}}`,
			"p.json:1:41: caps.memoryMb: 99999999999999999999 is not an integer in range\n\thint: it is far too large"},
		{"p.json", `{"toolScopes": {}, "caps": {"cpuSeconds": null}}`,
			"p.json:1:43: caps.cpuSeconds: null is not allowed here\n\thint: remove the field to take the default"},
		{"p.json", "{\"toolScopes\": {}, \"caps\": {\"memoryMb\": -1}}",
			"p.json:1:41: caps.memoryMb: memoryMb must be positive, got -1\n\thint: remove the field to take the default"},
		{"p.json", `{"toolScopes": {}, "caps": {"wallSeconds": 100000}}`,
			"p.json:1:44: caps.wallSeconds: wallSeconds is out of range: 100000 is more than 86400"},
		{"p.json", `{"toolScopes": {"t": {"allow": [{"name": "x", "command": ""}]}}}`,
			"p.json:1:58: toolScopes.t.allow[0].command: empty command name\n\thint: name a program, e.g. \"pytest\" or \"/usr/bin/pytest\""},
		{"p.json", `{"toolScopes": {"t": {"allow": [{"name": "x", "command": "ls"}], "deny": [{"name": "x", "command": "rm"}]}}}`,
			"p.json:1:42: toolScopes.t.allow[0].name: duplicate rule name \"x\" in tool \"t\" (also toolScopes.t.deny[0])\n\thint: rule names identify decisions in the audit stream; make each unique within its tool"},
		{"p.json", `{"toolScopes": {"t": {"allow": [{"name": "x", "command": "./ls"}]}}}`,
			"p.json:1:58: toolScopes.t.allow[0].command: command \"./ls\" is a path but not a clean absolute path\n\thint: use a bare name resolved through commandSearchPath, or an absolute path such as \"/usr/bin/git\""},
		{"p.json", `{"toolScopes": {}, "commandSearchPath": ["/usr/bin", "bin"]}`,
			"p.json:1:54: commandSearchPath[1]: search path entry \"bin\" is not a clean absolute path\n\thint: relative entries would depend on the current directory"},
		{"p.json", `{"toolScopes": {}, "filesystem": {"readWrite": ["/"]}}`,
			"p.json:1:49: filesystem.readWrite[0]: read-write path may not be the whole host root\n\thint: bind the directories the command needs, e.g. /usr"},
		{"p.json", `{"toolScopes": {}, "egress": {"default": "allow"}}`,
			"p.json:1:42: egress.default: egress default \"allow\" is not supported\n\thint: airlock denies by default; write \"deny\" or leave it out, and allowlist hosts per task"},
		{"p.json", `{"toolScopes": {}, "egress": {"taskAllowlist": {"t": ["ok.example", "169.254.169.254:80"]}}}`,
			"p.json:1:69: egress.taskAllowlist.t[1]: \"169.254.169.254:80\" is always blocked (cloud metadata or link-local) and can never be allowlisted\n\thint: remove it: no policy can reach metadata endpoints"},
		{"p.json", `{"toolScopes": {}, "egress": {"taskAllowlist": {"t": ["0.0.0.0/0"]}}}`,
			"p.json:1:55: egress.taskAllowlist.t[0]: \"0.0.0.0/0\": a catch-all range (it spans special-purpose blocks such as loopback, private and public addresses) is refused\n\thint: write \"*\" for any public host, and each non-public range you mean on its own (\"10.0.0.0/8\", \"127.0.0.1:8080\")"},
		{"p.json", `{"toolScopes": {}, "egress": {"taskAllowlist": {"t": ["127.0.0.0/8"]}}}`,
			"p.json:1:55: egress.taskAllowlist.t[0]: \"127.0.0.0/8\": this host's loopback and unspecified addresses are reached only through an entry that names the port\n\thint: add the port, e.g. \"127.0.0.1:8080\""},
		{"p.json", `{"toolScopes": {}, "egress": {"taskAllowlist": {"t": ["localhost:8080"]}}}`,
			"p.json:1:55: egress.taskAllowlist.t[0]: \"localhost:8080\": a localhost name resolves to loopback, which no name reaches (only an IP or CIDR entry with a port does)\n\thint: to reach a service on this host, write its address and port, e.g. \"127.0.0.1:8080\""},
		{"p.json", `{"toolScopes": {}, "weakerModes": ["egress-unenforced", "no-egress"]}`,
			"p.json:1:57: weakerModes[1]: unknown weaker mode \"no-egress\"\n\thint: known: egress-unenforced, macos-trustd"},
		{"p.json", `{"toolScopes": {}, "weakerModes": ["egress-unenforced", "egress-unenforced"]}`,
			"p.json:1:57: weakerModes[1]: weaker mode \"egress-unenforced\" is named twice"},
		{"p.json", `{"toolScopes": {}, "require": ["netns"], "weakerModes": ["egress-unenforced"]}`,
			"p.json:1:58: weakerModes[0]: weaker mode \"egress-unenforced\" gives up \"netns\", which require names\n\thint: drop one of the two"},
		{"p.json", `{"toolScopes": {}, "changes": {"exclude": ["node_modules/", "#cache"]}}`,
			"p.json:1:61: changes.exclude[1]: pattern \"#cache\": a pattern starting with \"#\" is a comment in a .gitignore file; write \"\\#\" for a name that starts with \"#\"\n\thint: the syntax is .gitignore's: see docs/changes.md"},
		{"p.yaml", "toolScopes: {}\nchanges:\n  exclude:\n    - '[ab'\n",
			"p.yaml:4:7: changes.exclude[0]: pattern \"[ab\": git can never match the pattern: an unclosed [, an unknown [:class:] or a trailing backslash\n\thint: the syntax is .gitignore's: see docs/changes.md"},
		{"p.json", `{"caps": {}}`,
			"p.json:1:1: missing toolScopes\n\thint: add \"toolScopes\": {} (an empty object denies every command)"},
		{"p.json", `[]`, "p.json:1:1: expected an object, found an array"},
		{"p.json", "  ", "p.json:1:1: empty policy\n\thint: write a policy object, e.g. {}"},
		{"p.json", `{"toolScopes": {`, "p.json:1:17: unexpected end of input"},
		{"p.yaml", "toolScopes:\n  t:\n    allow:\n      - name: x\n        comand: ls\n",
			"p.yaml:5:9: toolScopes.t.allow[0].comand: unknown field \"comand\"\n\thint: did you mean \"command\"?"},
		{"p.yaml", "toolScopes: {}\ntoolScopes: {}\n",
			"p.yaml:2:1: duplicate key \"toolScopes\" (first at line 1, column 1)\n\thint: a key may appear once per object; merge the two entries"},
		{"p.yaml", "toolScopes: &a {}\ncaps: *a\n",
			"p.yaml:1:13: YAML anchors and aliases are not allowed in a policy\n\thint: write the value out in full"},
		{"p.yaml", "toolScopes: {}\n---\ncaps: {}\n",
			"p.yaml:2:1: trailing data: a second YAML document\n\thint: a policy file holds exactly one document"},
		{"p.yaml", "toolScopes: {}\ncaps:\n  memoryMb: lots\n",
			"p.yaml:3:13: caps.memoryMb: expected an integer, found a string"},
	} {
		_, err := policy.Parse(c.name, []byte(c.src))
		if err == nil {
			t.Errorf("%s %q: no error", c.name, c.src)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("%s %q:\n got  %q\n want %q", c.name, c.src, err.Error(), c.want)
		}
		var pe *policy.Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: error is not a *policy.Error", c.src)
		}
	}
}

func TestOversizedPolicy(t *testing.T) {
	big := `{"toolScopes": {}, "commandSearchPath": ["` + strings.Repeat("a", policy.MaxSize) + `"]}`
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := policy.Load(path)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized policy: %v", err)
	}
	deep := strings.Repeat(`{"toolScopes": `, 1) + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}"
	if _, err := policy.Parse("deep.json", []byte(deep)); err == nil || !strings.Contains(err.Error(), "nesting too deep") {
		t.Fatalf("deeply nested policy: %v", err)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("AIRLOCK_POLICY", "")
	l, err := policy.Find("")
	if err != nil || l.Source != policy.EmbeddedName || l.Origin != policy.FromEmbedded || policy.Unread(l) != "" {
		t.Fatalf("no file: %+v %v", l, err)
	}
	// ./policy.json is never read implicitly, however it got there (an
	// agent in the working directory, a sandbox through --findings .),
	// and not even a dangling link to it goes unsaid.
	for _, make := range []func() error{
		func() error { return os.WriteFile("policy.json", []byte(`{"toolScopes": {"bash": {}}}`), 0o644) },
		func() error { return os.Symlink("nowhere.json", "policy.json") },
	} {
		os.Remove("policy.json")
		if err := make(); err != nil {
			t.Fatal(err)
		}
		l, err = policy.Find("")
		if err != nil || l.Source != policy.EmbeddedName || l.Origin != policy.FromEmbedded {
			t.Fatalf("./policy.json was read: %+v %v", l, err)
		}
		if n := policy.Unread(l); !strings.Contains(n, "./policy.json is not read; pass --policy ./policy.json") {
			t.Errorf("notice %q", n)
		}
	}
	os.Remove("policy.json")
	if err := os.WriteFile("policy.json", []byte(`{"toolScopes": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("env.json", []byte(`{"toolScopes": {"a": {}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIRLOCK_POLICY", "env.json")
	if l, err = policy.Find(""); err != nil || l.Source != "env.json" || l.Origin != policy.FromEnv || l.Path != filepath.Join(dir, "env.json") {
		t.Fatalf("$AIRLOCK_POLICY: %+v %v", l, err)
	}
	if l, err = policy.Find("policy.json"); err != nil || l.Source != "policy.json" || l.Origin != policy.FromFlag || policy.Unread(l) != "" {
		t.Fatalf("flag: %+v %v", l, err)
	}
	if i := l.Info(); i.Source != "policy.json" || i.Origin != policy.FromFlag || i.Path != filepath.Join(dir, "policy.json") || i.Digest != l.Digest {
		t.Errorf("info %+v", i)
	}
	// A broken or missing named file is an error, never a silent fallback.
	if err := os.WriteFile("broken.json", []byte(`{`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = policy.Find("broken.json"); err == nil {
		t.Fatal("a broken --policy file fell back to the default")
	}
	if _, err = policy.Find("missing.json"); err == nil {
		t.Fatal("a missing --policy file fell back to the default")
	}
	t.Setenv("AIRLOCK_POLICY", "missing.json")
	if _, err = policy.Find(""); err == nil {
		t.Fatal("a missing $AIRLOCK_POLICY file fell back to the default")
	}
}
