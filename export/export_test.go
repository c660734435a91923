package export

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
)

const testDigest = "sha256:015ac325c5f5b60778313e15359890864fd2ce9ed9cc6e3b35e9368526af225b"

const testPolicy = `{
  "toolScopes": {
    "run_tests": {
      "allow": [{"name": "pytest", "command": "pytest", "argPatterns": [["-v"]], "allowExtraArgs": false}],
      "escalate": [{"name": "pip", "command": "pip"}],
      "caps": {"memoryMb": 300, "processCount": 40, "diskWriteMb": 50, "cpuSeconds": 20, "wallSeconds": 8.5, "openFiles": 128}
    }
  },
  "egress": {"default": "deny", "taskAllowlist": {"docs": ["docs.example.com", "*.pypi.example:443", "203.0.113.0/24"]},
    "alwaysBlocked": ["10.9.9.9"]}
}`

func testTask(t *testing.T, task string) *Task {
	t.Helper()
	pol, err := policy.Parse("test.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Resolve(pol, Request{Tool: "run_tests", Task: task, Image: "registry.example/ci/py@" + testDigest, Command: []string{"pytest", "-v"}})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// flagValues returns every value given to flag in args.
func flagValues(args []string, flag string) []string {
	var out []string
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}

// TestPodmanControls maps every cap and control of the policy to the
// podman flag that carries it, with the value it must have.
func TestPodmanControls(t *testing.T) {
	out, err := Podman(testTask(t, "docs"), PodmanOptions{SeccompFile: "/etc/airlock/seccomp.json"})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Args
	for _, c := range []struct {
		control, flag string
		want          []string
	}{
		{"memoryMb", "--memory", []string{"300m"}},
		{"memoryMb (no swap)", "--memory-swap", []string{"300m"}},
		{"processCount", "--pids-limit", []string{"40"}},
		{"cpuSeconds / wallSeconds", "--cpus", []string{"2.353"}},
		{"wallSeconds", "--timeout", []string{"9"}},
		{"uid 65534", "--user", []string{"65534:65534"}},
		{"seccomp and no_new_privs", "--security-opt", []string{"no-new-privileges", "seccomp=/etc/airlock/seccomp.json"}},
		{"network: the proxy's namespace only", "--network", []string{"ns:/run/netns/$AIRLOCK_NETNS"}},
		{"no resolver", "--dns", []string{"none"}},
		{"the working directory the command gate decided with", "--workdir", []string{"/workspace"}},
		{"diskWriteMb: /dev/shm", "--shm-size", []string{"52428800b"}},
		{"cpuSeconds, diskWriteMb, openFiles, core dumps", "--ulimit", []string{"cpu=20:21", "fsize=52428800:52428800",
			"nofile=128:128", "nproc=4096:4096", "core=0:0"}},
		{"diskWriteMb: the writable directories", "--mount", []string{
			"type=tmpfs,destination=/tmp,tmpfs-size=52428800,tmpfs-mode=1777,U=true,nosuid,nodev,notmpcopyup",
			"type=tmpfs,destination=/workspace,tmpfs-size=52428800,tmpfs-mode=0755,U=true,nosuid,nodev,tmpcopyup",
			"type=tmpfs,destination=/findings,tmpfs-size=52428800,tmpfs-mode=0755,U=true,nosuid,nodev,noexec,notmpcopyup"}},
	} {
		if got := flagValues(a, c.flag); !slices.Equal(got, c.want) {
			t.Errorf("%s: %s = %q, want %q", c.control, c.flag, got, c.want)
		}
	}
	for _, flag := range []string{"--rm", "--cap-drop=all", "--read-only", "--read-only-tmpfs=false"} {
		if !slices.Contains(a, flag) {
			t.Errorf("missing %s", flag)
		}
	}
	env := flagValues(a, "--env")
	for _, e := range []string{"HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "ALL_PROXY=socks5h://127.0.0.1:3128", "NO_PROXY="} {
		if !slices.Contains(env, e) {
			t.Errorf("env lacks %s: %q", e, env)
		}
	}
	if tail := a[len(a)-3:]; !slices.Equal(tail, []string{"registry.example/ci/py@" + testDigest, "pytest", "-v"}) {
		t.Errorf("image and command: %q", tail)
	}
	if string(out.Profile) != string(seccomp.ContainerProfile()) {
		t.Error("the profile is not the seccomp package's")
	}
	if !strings.Contains(out.Script, "--task docs --netns") || strings.Contains(out.Script, "AIRLOCK_SECCOMP=") {
		t.Error("the script does not serve the task's proxy, or carries the profile it was told is a file")
	}
}

// TestPodmanNoTask checks that without a task there is no proxy and no
// proxy variable: the namespace has only lo.
func TestPodmanNoTask(t *testing.T) {
	out, err := Podman(testTask(t, ""), PodmanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Script, `"$airlock" proxy`) || len(flagValues(out.Args, "--env")) != 0 {
		t.Error("a task with no egress still gets a proxy")
	}
	if !strings.Contains(out.Script, "AIRLOCK_SECCOMP=$work/seccomp.json") || !slices.Contains(out.Args, "seccomp=$AIRLOCK_SECCOMP") {
		t.Error("without --seccomp-out the script does not write the profile")
	}
}

// TestPodmanScriptParses checks the script with sh -n, and that every
// argument comes out quoted.
func TestPodmanScriptParses(t *testing.T) {
	pol, err := policy.Parse("test.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Resolve(pol, Request{Tool: "run_tests", Task: "docs", Image: "registry.example/ci/py@" + testDigest, Command: []string{"pytest", "-v"}})
	if err != nil {
		t.Fatal(err)
	}
	tk.Command = []string{"pytest", "-v", "$(touch /tmp/pwned)", "a'b", "*"} // as if the gate allowed it
	out, err := Podman(tk, PodmanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Line, `'$(touch /tmp/pwned)' "a'b" '*'`) {
		t.Errorf("arguments not quoted: %s", out.Line[strings.LastIndex(out.Line, "pytest"):])
	}
	cmd := exec.Command("sh", "-n")
	cmd.Stdin = strings.NewReader(out.Script)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sh -n: %v: %s", err, b)
	}
	tk.Command = []string{"pytest", "-v\x1b[2J"}
	if _, err := Podman(tk, PodmanOptions{}); err == nil {
		t.Error("an argument with a control character was exported")
	}
}

// TestResolveRefuses checks each refusal and its reason.
func TestResolveRefuses(t *testing.T) {
	pol, err := policy.Parse("test.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	img := "registry.example/ci/py@" + testDigest
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Tool: "nope", Image: img, Command: []string{"pytest", "-v"}}, `tool "nope" is not in the policy (it has: run_tests)`},
		{Request{Tool: "run_tests", Task: "typo", Image: img, Command: []string{"pytest", "-v"}}, `task "typo" has no allowlist`},
		{Request{Tool: "run_tests", Image: "registry.example/ci/py:latest", Command: []string{"pytest", "-v"}}, "is not pinned"},
		{Request{Tool: "run_tests", Image: "py@" + testDigest, Command: []string{"pytest", "-v"}}, "REGISTRY/NAME"},
		{Request{Tool: "run_tests", Image: "registry.example/ci/py@sha256:abc", Command: []string{"pytest", "-v"}}, "want REGISTRY/NAME@sha256"},
		{Request{Tool: "run_tests", Image: img}, "name the command"},
		{Request{Tool: "run_tests", Image: img, Command: []string{"pytest", "-x"}}, "the command gate does not allow it: command: deny"},
		{Request{Tool: "run_tests", Image: img, Command: []string{"pip"}}, "the command gate does not allow it: command: escalate"},
	} {
		_, err := Resolve(pol, c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.req, err, c.want)
		}
	}
	tk := testTask(t, "docs")
	for _, proxy := range []string{"0.0.0.0:3128", "10.0.0.1:3128", "127.0.0.1", "localhost:3128", "127.0.0.1:0"} {
		if _, err := Podman(tk, PodmanOptions{Proxy: proxy}); err == nil {
			t.Errorf("proxy %q accepted", proxy)
		}
	}
}

// TestPodmanLineExact runs the run line in sh with podman a function that
// prints its arguments: the command comes out byte for byte, and an
// argument that names a script variable ($AIRLOCK_NETNS) with a command
// substitution after it runs nothing. Before, any argument holding
// "$AIRLOCK_" was put in double quotes as it was, so the substitution ran
// as root when the script did; the seccomp file's path likewise.
func TestPodmanLineExact(t *testing.T) {
	dir := t.TempDir()
	pwned := dir + "/pwned"
	tk := testTask(t, "docs")
	tk.Command = []string{"pytest", "-v", "$AIRLOCK_NETNS$(touch " + pwned + ")", "`touch " + pwned + "`$AIRLOCK_SECCOMP", "$AIRLOCK_NETNS"} // as if the gate allowed it
	for _, o := range []PodmanOptions{{}, {SeccompFile: dir + "/$AIRLOCK_x$(touch " + pwned + ")"}} {
		out, err := Podman(tk, o)
		if err != nil {
			t.Fatal(err)
		}
		script := "podman() { printf '%s\\n' \"$@\"; }\nAIRLOCK_NETNS=airlock-1\nAIRLOCK_SECCOMP=/s.json\n" + out.Line + "\n"
		cmd := exec.Command("sh", "-c", script)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if _, err := os.Stat(pwned); err == nil {
			t.Fatalf("the run line ran a command substitution: %s", out.Line)
		}
		if tail := got[len(got)-len(tk.Command):]; !slices.Equal(tail, tk.Command) {
			t.Errorf("the command came out as %q, want %q", tail, tk.Command)
		}
		want := []string{"ns:/run/netns/airlock-1", "seccomp=/s.json"}
		if o.SeccompFile != "" {
			want[1] = "seccomp=" + o.SeccompFile
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%q not among the arguments %q", w, got)
			}
		}
	}
}

// TestPodmanPolicyHereDoc: a policy whose strings hold the here-document's
// delimiter on a line of its own, and shell text after it, is written by
// the script exactly as exported, and nothing after the delimiter runs
// (JSON carries a newline in a string as \n, so no line of the document
// is the delimiter).
func TestPodmanPolicyHereDoc(t *testing.T) {
	dir := t.TempDir()
	pwned := dir + "/pwned"
	src := strings.Replace(testPolicy, `"argPatterns": [["-v"]], "allowExtraArgs": false`,
		`"argPatterns": [["-v"], ["\nAIRLOCK_EOF\ntouch `+pwned+`\ncat <<'AIRLOCK_EOF'\n"]], "allowExtraArgs": false`, 1)
	pol, err := policy.Parse("test.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Resolve(pol, Request{Tool: "run_tests", Task: "docs", Image: "registry.example/ci/py@" + testDigest, Command: []string{"pytest", "-v"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Podman(tk, PodmanOptions{SeccompFile: "/s.json"})
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(out.Script, "cat >\"$work/policy.json\"")
	end := strings.Index(out.Script[start:], "\nAIRLOCK_EOF\n") + start + len("\nAIRLOCK_EOF\n")
	cmd := exec.Command("sh", "-c", "work="+dir+"\n"+out.Script[start:end])
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh: %v: %s", err, b)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("text after the delimiter in the policy ran")
	}
	got, err := os.ReadFile(dir + "/policy.json")
	want, _ := PolicyJSON(tk.Policy())
	if err != nil || string(got) != string(want) {
		t.Errorf("the script wrote %q (%v), want the exported policy %q", got, err, want)
	}
}
