package enforcer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox"
	"github.com/airlock-sandbox/airlock/sandbox/holes"
)

// envPolicy has a shell tool, a task that reaches a loopback port through
// an IP:port entry, one that inspects a host and gives it a credential,
// and sessions stopped by a metadata_access alert.
func envPolicy(port string) string {
	return fmt.Sprintf(`{
  "toolScopes": {
    "shell": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}],
      "caps": {"cpuSeconds": 30, "wallSeconds": 60, "memoryMb": 512, "processCount": 32}}
  },
  "egress": {
    "taskAllowlist": {
      "local": ["127.0.0.1:%s"],
      "gh": [{"host": "api.example.com", "inspect": true}]
    },
    "credentials": [{"name": "tok", "host": "api.example.com", "scheme": "bearer", "fromEnv": "AIRLOCK_TEST_ENV_TOKEN", "sandboxEnv": "API_TOKEN"}]
  },
  "session": {"onAlert": ["metadata_access"]}
}`, port)
}

// lines returns the lines of out that start with prefix.
func lines(out, prefix string) []string {
	var l []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			l = append(l, line)
		}
	}
	return l
}

// TestSandboxEnv: HOME, the XDG directories and the caches of pip, npm,
// Go and Python's byte code are in the session's /tmp, HOME made for the
// sandbox's user, and nothing of them lands in the patch; an Env entry
// replaces the variable of its name (one entry, its value), where it was
// appended after airlock's own, which programs read first.
func TestSandboxEnv(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixtureWith(t, envPolicy("1"), false, nil)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "mod.py"), []byte("X = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, f, enforcer.SessionRequest{Workspace: ws})
	var out bytes.Buffer
	st := shStep(`env; test -d "$HOME" -a -O "$HOME" && touch "$HOME/.profile" && echo home-ok; python3 -c 'import mod; print("imported", mod.X)'`, &out)
	res, err := s.Exec(context.Background(), st)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("step: %v, exit %d:\n%s", err, res.ExitCode, out.String())
	}
	got := out.String()
	for _, want := range []string{"HOME=" + sandbox.HomeDir, "XDG_CACHE_HOME=/tmp/cache", "PIP_CACHE_DIR=/tmp/cache/pip",
		"npm_config_cache=/tmp/cache/npm", "GOCACHE=/tmp/cache/go-build", "GOMODCACHE=/tmp/cache/go-mod", "GOPATH=/tmp/home/go",
		"PYTHONPYCACHEPREFIX=/tmp/cache/pycache", "home-ok", "imported 1"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("no %q inside:\n%s", want, got)
		}
	}
	c, err := s.Changes()
	if err != nil {
		t.Fatal(err)
	}
	for _, fc := range c.Files {
		t.Errorf("the step's caches landed in the patch: %s", fc.Path)
	}

	out.Reset()
	st = shStep(`env`, &out)
	st.Env = []string{"HOME=/tmp/mine", "LANG=C", "EXTRA=1"}
	if res, err := s.Exec(context.Background(), st); err != nil || res.ExitCode != 0 {
		t.Fatalf("step: %v, exit %d", err, res.ExitCode)
	}
	for name, want := range map[string]string{"HOME": "/tmp/mine", "LANG": "C", "EXTRA": "1", "PATH": ""} {
		l := lines(out.String(), name+"=")
		if len(l) != 1 || want != "" && l[0] != name+"="+want {
			t.Errorf("%s inside: %q, want one entry %s=%s", name, l, name, want)
		}
	}
}

// TestEnvReservedRefused: an Env entry that sets a proxy variable (in any
// case), or, for a task that inspects a host, the CA bundle's variable
// or a credential's placeholder, is refused with ErrEnv and ExitUsage,
// before anything is decided, run or recorded, where it was dropped
// without a word (or left beside airlock's own). The same variables are
// the caller's to set for a task without them.
func TestEnvReservedRefused(t *testing.T) {
	testutil.RequireRoot(t)
	t.Setenv("AIRLOCK_TEST_ENV_TOKEN", "secret")
	f := newFixtureWith(t, envPolicy("1"), false, nil)
	ctx := context.Background()
	s := openSession(t, f, enforcer.SessionRequest{Task: "gh"})
	for _, c := range []struct {
		task string
		env  string
		want string
	}{
		{"local", "HTTP_PROXY=http://elsewhere:3128", "HTTP_PROXY: the sandbox's proxy variables are airlock's"},
		{"local", "NO_PROXY=", "NO_PROXY: the sandbox's proxy variables"},
		{"local", "no_proxy=127.0.0.1", "no_proxy: the sandbox's proxy variables"},
		{"local", "All_Proxy=socks5://x", "All_Proxy: the sandbox's proxy variables"},
		{"gh", "SSL_CERT_FILE=/workspace/ca.pem", `SSL_CERT_FILE: task "gh" sets it`},
		{"gh", "API_TOKEN=guess", `API_TOKEN: task "gh" sets it`},
		{"local", "NOEQUALS", `"NOEQUALS": want NAME=VALUE`},
	} {
		id := enforcer.NewRunID()
		res, err := f.enf.Run(ctx, enforcer.Request{RunID: id, Tool: "shell", Task: c.task, Command: "sh", Args: []string{"-c", "true"}, Env: []string{c.env}})
		if !errors.Is(err, enforcer.ErrEnv) || !strings.Contains(err.Error(), c.want) || res.ExitCode != enforcer.ExitUsage || res.Error != err.Error() {
			t.Errorf("run, env %q: exit %d, error %v; want ErrEnv %q", c.env, res.ExitCode, err, c.want)
		}
		if evs := f.events(id); len(evs) != 0 {
			t.Errorf("run, env %q: recorded %d events", c.env, len(evs))
		}
		if c.task != "gh" {
			continue
		}
		st := shStep("true", nil)
		st.Env = []string{c.env}
		res, err = s.Exec(ctx, st)
		if !errors.Is(err, enforcer.ErrEnv) || res.ExitCode != enforcer.ExitUsage || res.Step != 1 {
			t.Errorf("step, env %q: exit %d step %d, error %v", c.env, res.ExitCode, res.Step, err)
		}
	}
	// A task that inspects nothing leaves SSL_CERT_FILE to the caller.
	var out bytes.Buffer
	res, err := f.enf.Run(ctx, enforcer.Request{Tool: "shell", Task: "local", Command: "sh", Args: []string{"-c", `echo "$SSL_CERT_FILE"`},
		Env: []string{"SSL_CERT_FILE=/workspace/ca.pem"}, Stdout: &out, Stderr: &out})
	if err != nil || res.ExitCode != 0 || out.String() != "/workspace/ca.pem\n" {
		t.Errorf("SSL_CERT_FILE on a task without inspection: exit %d, %v, %q", res.ExitCode, err, out.String())
	}
	if evs := f.events(s.ID()); len(evs) != 1 || evs[0].Context.Event != audit.EventSandboxLaunched {
		t.Errorf("the refused steps recorded %d events", len(evs))
	}
}

// TestLoopbackAllowlistThroughProxy: with "127.0.0.1:PORT" in the task's
// allowlist, a client that honours NO_PROXY (Python's urllib, as pip's
// requests) reaches the host's loopback server through the proxy, where
// NO_PROXY listed 127.0.0.1 and the client went round the proxy into
// Landlock's EACCES.
func TestLoopbackAllowlistThroughProxy(t *testing.T) {
	testutil.RequireRoot(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "simple index")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	f := newFixtureWith(t, envPolicy(port), false, nil)
	var out, notices bytes.Buffer
	script := fmt.Sprintf(`echo "NO_PROXY=[$NO_PROXY] no_proxy=[$no_proxy]"
python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:%s/simple/", timeout=10).read().decode())'`, port)
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "shell", Task: "local", Command: "sh", Args: []string{"-c", script},
		Stdout: &out, Stderr: &out, Notices: &notices})
	if err != nil || res.ExitCode != 0 || !strings.Contains(out.String(), "NO_PROXY=[] no_proxy=[]\nsimple index") {
		t.Fatalf("exit %d, %v:\n%s%s", res.ExitCode, err, out.String(), notices.String())
	}
	if len(res.Egress) != 1 || res.Egress[0].Decision != "allow" || res.Egress[0].Rule != "127.0.0.1:"+port {
		t.Errorf("egress %+v: want the allowed request through the proxy", res.Egress)
	}
}

// TestAllowedThenFailed: an allowed connection that then fails (nothing
// listens on the allowlisted loopback port) is one stderr line as it
// happens and an entry of the result's egressFailed, as a refusal is,
// where it was in the audit log alone.
func TestAllowedThenFailed(t *testing.T) {
	testutil.RequireRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	f := newFixtureWith(t, envPolicy(port), false, nil)
	var out, notices bytes.Buffer
	script := fmt.Sprintf(`python3 -c 'import urllib.request
try:
    urllib.request.urlopen("http://127.0.0.1:%s/simple/", timeout=10)
except Exception as e:
    print("failed:", e)'`, port)
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "shell", Task: "local", Command: "sh", Args: []string{"-c", script},
		Stdout: &out, Stderr: &out, Notices: &notices})
	if err != nil || res.ExitCode != 0 || !strings.Contains(out.String(), "failed: HTTP Error 502") {
		t.Fatalf("exit %d, %v:\n%s", res.ExitCode, err, out.String())
	}
	want := "airlock: egress: allowed, then failed: 127.0.0.1:" + port + ": dial tcp 127.0.0.1:" + port + ": connect: connection refused\n"
	if notices.String() != want {
		t.Errorf("notices %q, want %q", notices.String(), want)
	}
	if len(res.EgressFailed) != 1 || res.EgressFailed[0].Host != "127.0.0.1" || res.EgressFailed[0].Rule != "127.0.0.1:"+port ||
		!strings.Contains(res.EgressFailed[0].Reason, "connection refused") {
		t.Errorf("egressFailed %+v", res.EgressFailed)
	}
	checkResult(t, res)
}

// TestSessionStoppedByAlert: under session.onAlert ["metadata_access"], a
// step that asks the proxy for the metadata address (refused by the
// floor, never dialled) freezes the session, keeps its evidence, ends
// the step with ExitEscape and why, refuses the next step with the same,
// and marks the findings untrusted, where the session went on.
func TestSessionStoppedByAlert(t *testing.T) {
	testutil.RequireRoot(t)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	f := newFixtureWith(t, envPolicy("1"), true, nil)
	findings := filepath.Join(t.TempDir(), "findings")
	s, err := f.enf.OpenSession(context.Background(), enforcer.SessionRequest{Findings: findings})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), shStep(`echo kept > /findings/report.txt
python3 -c 'import urllib.request
try:
    urllib.request.urlopen("http://169.254.169.254/latest/meta-data/", timeout=10)
except Exception as e:
    print("refused:", e)'
sleep 30`, &out))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != enforcer.ExitEscape || !strings.Contains(res.EscapeSuspected, "alert metadata_access (session.onAlert)") {
		t.Fatalf("step: exit %d, escapeSuspected %q:\n%s", res.ExitCode, res.EscapeSuspected, out.String())
	}
	checkResult(t, res)
	<-s.Done()
	sum, _ := s.Summary()
	if sum.Ended != enforcer.EndedEscape || sum.Evidence == "" || !strings.HasPrefix(sum.Evidence, filepath.Join(state, "airlock", "evidence")) {
		t.Fatalf("summary %+v", sum)
	}
	for _, p := range []string{"summary.json", "sandbox/processes.json", "sandbox/mounts.txt"} {
		if _, err := os.Stat(filepath.Join(sum.Evidence, p)); err != nil {
			t.Errorf("evidence: %v", err)
		}
	}
	next, err := s.Exec(context.Background(), shStep("true", nil))
	if !errors.Is(err, enforcer.ErrSessionEnded) || next.ExitCode != enforcer.ExitEscape || !strings.Contains(next.EscapeSuspected, "alert metadata_access") {
		t.Errorf("next step: exit %d, %q, %v", next.ExitCode, next.EscapeSuspected, err)
	}
	if b, err := os.ReadFile(filepath.Join(findings, "UNTRUSTED")); err != nil || !strings.Contains(string(b), "alert metadata_access") {
		t.Errorf("findings not marked untrusted: %v %q", err, b)
	}
	if b, err := os.ReadFile(filepath.Join(findings, "report.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("findings: %v %q", err, b)
	}
	var escape bool
	for _, ev := range f.events(s.ID()) {
		if ev.Context.Event == audit.EventEscapeSuspected && ev.Context.Details["alert"] == "metadata_access" && ev.Context.Details["evidence"] == sum.Evidence {
			escape = true
		}
	}
	if !escape {
		t.Error("no escape_suspected record naming the alert and the evidence")
	}
	if len(f.dials) != 0 {
		t.Errorf("the proxy dialled %v", f.dials)
	}
	testutil.CheckNoSandboxLeft(t, s.ID())
}

// TestSessionOpenFailedNotStopped: a session whose start-up probe fails
// raises startup_refused; under session.onAlert ["startup_refused"] the
// open fails as it would, and nothing tries to stop a sandbox that never
// served (it panicked on the session's nil sandbox).
func TestSessionOpenFailedNotStopped(t *testing.T) {
	testutil.RequireRoot(t)
	holes.Open(t, holes.All[0].Name)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	f := newFixtureWith(t, strings.Replace(envPolicy("1"), `"metadata_access"`, `"startup_refused"`, 1), true, nil)
	id := enforcer.NewSessionID()
	if _, err := f.enf.OpenSession(context.Background(), enforcer.SessionRequest{ID: id}); !errors.Is(err, sandbox.ErrProbe) {
		t.Fatalf("open: %v, want a start-up probe failure", err)
	}
	var alerted bool
	for _, ev := range f.events(id) {
		alerted = alerted || ev.Context.Alert == "startup_refused"
		if ev.Context.Event == audit.EventEscapeSuspected {
			t.Errorf("escape_suspected recorded: %+v", ev)
		}
	}
	if !alerted {
		t.Error("no startup_refused alert: the test shows nothing")
	}
	testutil.CheckNoSandboxLeft(t, id)
}
