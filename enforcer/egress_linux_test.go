package enforcer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/proxy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// standInResolver answers every name with the stand-in of 127.0.0.1:
// the proxy dials it, and the stand-in dialer connects it to loopback.
type standInResolver struct{}

func (standInResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{testutil.StandIn(netip.MustParseAddr("127.0.0.1"))}, nil
}

// egressServers are the loopback servers of the egress tests: an HTTPS
// API (HTTP/2 and HTTP/1.1) recording what it was asked, a git smart-HTTP
// server behind basic authentication (git http-backend), and a raw sink
// that counts the bytes each connection brings, sends the count on sunk
// and answers it. Their certificate is httptest's,
// for example.com and its subdomains; caFile holds it, as the entries'
// upstreamCa.
type egressServers struct {
	api, git       *httptest.Server
	apiPort        string
	gitPort        string
	caFile         string
	sink           net.Listener
	mu             sync.Mutex
	apiSeen        []string
	sunk           chan int64
	gitUser, token string
}

func newEgressServers(t *testing.T) *egressServers {
	t.Helper()
	s := &egressServers{gitUser: "x-access-token", token: "tok-" + randomHex(t)}
	s.api = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.apiSeen = append(s.apiSeen, r.Method+" "+r.URL.Path+" "+r.Proto)
		s.mu.Unlock()
		fmt.Fprintf(w, "api %s %s %s body=%d\n", r.Method, r.URL.Path, r.Proto, n)
	}))
	s.api.EnableHTTP2 = true
	s.api.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.api.StartTLS()
	t.Cleanup(s.api.Close)

	testutil.RequireCommands(t, "git")
	root := t.TempDir()
	work := filepath.Join(root, "work")
	for _, args := range [][]string{{"init", "-q", "-b", "main", work}} {
		if out, err := testutil.GitCmd(root, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "README"), []byte("cloned through airlock\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "README"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first"},
		{"clone", "-q", "--bare", work, filepath.Join(root, "repo.git")}} {
		if out, err := testutil.GitCmd(work, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	cgiHandler := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(s.gitUser+":"+s.token))
	s.git = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		cgiHandler.ServeHTTP(w, r)
	}))
	s.git.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.git.StartTLS()
	t.Cleanup(s.git.Close)

	s.caFile = filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(s.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.api.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	s.apiPort, s.gitPort = portOf(t, s.api.URL), portOf(t, s.git.URL)

	s.sink, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.sink.Close() })
	s.sunk = make(chan int64, 16)
	go func() {
		for {
			c, err := s.sink.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				n, _ := io.Copy(io.Discard, c)
				s.sunk <- n
				fmt.Fprintf(c, "%d\n", n) // the count, to a client still there
			}()
		}
	}()
	return s
}

// received is the count of the sink's next connection, once it has
// ended: a step's tunnel that the proxy cut may end at the sink after the
// step has.
func (s *egressServers) received(t *testing.T) int64 {
	t.Helper()
	select {
	case n := <-s.sunk:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no connection ended at the sink in 10s")
		return 0
	}
}

func randomHex(t *testing.T) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func portOf(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// egressPolicy inspects api.example.com (rules: read acme's repositories,
// post uploads, never /admin, WebSocket on /live) and git.example.com
// (fetch only, with the git credential), leaves opaque.example.com
// opaque, and caps the budget task's tunnels at 1000 bytes out.
func (s *egressServers) policy() string {
	_, sinkPort, _ := net.SplitHostPort(s.sink.Addr().String())
	return fmt.Sprintf(`{
  "toolScopes": {
    "egress_shell": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}],
      "caps": {"cpuSeconds": 60, "wallSeconds": 120, "memoryMb": 1024, "processCount": 64, "outputMb": 64}},
    "egress_payload": {"allow": [{"name": "payload", "command": "/.airlock/self", "argPatterns": [["payload"]], "allowExtraArgs": true}],
      "caps": {"cpuSeconds": 20, "wallSeconds": 60, "memoryMb": 512, "processCount": 32}}
  },
  "egress": {
    "taskAllowlist": {
      "inspect": [
        {"host": "api.example.com", "inspect": true, "upstreamCa": %[1]q, "rules": [
          {"name": "read", "methods": ["GET", "HEAD"], "paths": ["/repos/acme/**"]},
          {"name": "upload", "methods": ["POST"], "pathPrefixes": ["/upload/"]},
          {"name": "no-admin", "action": "deny", "paths": ["/**/admin/**"]}
        ]},
        {"host": "git.example.com", "inspect": true, "upstreamCa": %[1]q, "rules": [
          {"name": "refs", "methods": ["GET"], "paths": ["/repo.git/info/refs"], "query": {"service": ["git-upload-pack"]}},
          {"name": "fetch", "methods": ["POST"], "paths": ["/repo.git/git-upload-pack"]}
        ]},
        "opaque.example.com"
      ],
      "budget": ["127.0.0.1:%[2]s"]
    },
    "credentials": [
      {"name": "git", "host": "git.example.com", "scheme": "basic", "username": %[3]q, "fromEnv": "AIRLOCK_TEST_GIT_TOKEN",
       "sandboxEnv": "GIT_TOKEN"}
    ],
    "budgets": {"budget": {"bytesOut": 1000}}
  },
  "session": {"egress": {"bytesOut": 1200}}
}`, s.caFile, sinkPort, s.gitUser)
}

func newEgressFixture(t *testing.T, s *egressServers) *fixture {
	t.Helper()
	t.Setenv("AIRLOCK_TEST_GIT_TOKEN", s.token)
	return newFixtureWith(t, s.policy(), true, standInResolver{}, func(o *enforcer.Options) {
		o.Dialer = proxy.DialerFunc(testutil.StandInDialer(t))
	})
}

// runIn runs tool's command in a sandbox of task and returns its stdout
// and stderr together, airlock's notices apart.
func (f *fixture) runIn(t *testing.T, tool, task, command string, args ...string) (enforcer.Result, string) {
	t.Helper()
	var out, notices bytes.Buffer
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: tool, Task: task, Command: command, Args: args,
		Stdout: &out, Stderr: &out, Notices: &notices})
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", command, args, err, out.String())
	}
	if notices.Len() > 0 {
		t.Logf("airlock's notices:\n%s", notices.String())
	}
	return res, out.String()
}

// TestInspectedFromInside: curl over HTTP/1.1 and HTTP/2 and Python's
// urllib, from inside a real sandbox, through an inspected entry: allowed and
// refused methods and paths (403 with X-Airlock-Reason), the session CA
// trusted through the bundle the sandbox's variables name.
func TestInspectedFromInside(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (.ci/run installs it)", tool)
		}
	}
	s := newEgressServers(t)
	f := newEgressFixture(t, s)
	base := "https://api.example.com:" + s.apiPort
	script := fmt.Sprintf(`set -u
for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS CURL_CA_BUNDLE GIT_SSL_CAINFO; do eval "echo $v=\$$v"; done
grep -c 'airlock session CA' %[2]s /etc/ssl/certs/ca-certificates.crt
curl -sS --http1.1 -w ' status=%%{http_code} http=%%{http_version}\n' %[1]s/repos/acme/widget
curl -sS --http2 -w ' status=%%{http_code} http=%%{http_version}\n' %[1]s/repos/acme/widget
curl -sS -o /dev/null -D - -X DELETE %[1]s/repos/acme/widget | grep -i -e '^HTTP' -e '^x-airlock-reason'
curl -sS -o /dev/null -D - %[1]s/repos/acme/x/admin/keys | grep -i -e '^HTTP' -e '^x-airlock-reason'
curl -sS -w ' status=%%{http_code}\n' -d 'twelve bytes' %[1]s/upload/notes
python3 - <<'EOF'
import urllib.request, urllib.error
print("py", urllib.request.urlopen(%[1]q + "/repos/acme/py").read().decode().strip())
try:
    urllib.request.urlopen(urllib.request.Request(%[1]q + "/repos/other/py", method="GET"))
except urllib.error.HTTPError as e:
    print("py refused", e.code, e.headers.get("X-Airlock-Reason"))
EOF
`, base, enforcer.CABundlePath)
	res, out := f.runIn(t, "egress_shell", "inspect", "sh", "-c", script)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d:\n%s", res.ExitCode, out)
	}
	t.Logf("inside:\n%s", out)
	for _, want := range []string{
		"SSL_CERT_FILE=" + enforcer.CABundlePath, "GIT_SSL_CAINFO=" + enforcer.CABundlePath, "NODE_EXTRA_CA_CERTS=" + enforcer.CABundlePath,
		enforcer.CABundlePath + ":1", "/etc/ssl/certs/ca-certificates.crt:1",
		"api GET /repos/acme/widget HTTP/2.0 body=0\n status=200 http=1.1",
		"api GET /repos/acme/widget HTTP/2.0 body=0\n status=200 http=2",
		"HTTP/2 403", `no rule of entry "api.example.com" allows it`,
		`refused by deny rule "no-admin"`,
		"api POST /upload/notes HTTP/2.0 body=12\n status=200",
		"py api GET /repos/acme/py",
		"py refused 403 task \"inspect\": request \"GET /repos/other/py\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inside, no %q", want)
		}
	}
	s.mu.Lock()
	seen := strings.Join(s.apiSeen, "|")
	s.mu.Unlock()
	if strings.Contains(seen, "DELETE") || strings.Contains(seen, "admin") || strings.Contains(seen, "other") {
		t.Errorf("a refused request reached the upstream: %s", seen)
	}
	f.verify(t)
}

// TestGitCredentialFromInside: git clones over HTTPS from a server that
// wants basic authentication, with the credential the proxy adds; the
// value is nowhere inside the sandbox (environment, files, /proc) nor in
// the audit log, and the placeholder sent to another host is refused.
func TestGitCredentialFromInside(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl (.ci/run installs it)")
	}
	s := newEgressServers(t)
	f := newEgressFixture(t, s)
	script := fmt.Sprintf(`set -u
git clone -q https://git.example.com:%[1]s/repo.git /tmp/clone && cat /tmp/clone/README
git -C /tmp/clone push -q origin HEAD:refs/heads/evil 2>&1 | tail -1
echo "placeholder is set: ${#GIT_TOKEN}"
curl -sS -o /dev/null -D - -H "Authorization: Bearer $GIT_TOKEN" https://api.example.com:%[2]s/repos/acme/x | grep -i '^x-airlock-reason'
echo '--- everything the sandbox holds'
env; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n'
find /workspace /tmp /run /etc /findings -type f -size -2M 2>/dev/null | xargs cat 2>/dev/null
true
`, s.gitPort, s.apiPort)
	res, out := f.runIn(t, "egress_shell", "inspect", "sh", "-c", script)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d:\n%.4000s", res.ExitCode, out)
	}
	head, _, _ := strings.Cut(out, "--- everything")
	t.Logf("inside:\n%s", head)
	for _, want := range []string{"cloned through airlock", "returned error: 403", "placeholder is set: ", `placeholder of credential "git"`} {
		if !strings.Contains(head, want) {
			t.Errorf("inside, no %q", want)
		}
	}
	basic := base64.StdEncoding.EncodeToString([]byte(s.gitUser + ":" + s.token))
	for _, secret := range []string{s.token, basic} {
		if strings.Contains(out, secret) {
			t.Errorf("the credential's value is inside the sandbox")
		}
		logBytes, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(logBytes, []byte(secret)) {
			t.Errorf("the credential's value is in the audit log")
		}
	}
	// The record names the credential the proxy added, by name.
	var credited int
	for _, ev := range f.events(res.RunID) {
		if ev.Context.Details["credential"] == "git" {
			credited++
		}
	}
	if credited == 0 {
		t.Error("no record names the credential added")
	}
	f.verify(t)
}

// TestEgressAttacksFromInside: airlock's own binary as the attacker, with
// raw sockets: a fronted SNI into an opaque and an inspected tunnel, a
// rule-breaking request pipelined behind an allowed one, and a tunnel
// past its byte budget by a known number of bytes, which is audited and
// raises a monitor alert.
func TestEgressAttacksFromInside(t *testing.T) {
	testutil.RequireRoot(t)
	s := newEgressServers(t)
	f := newEgressFixture(t, s)
	payloadRun := func(task string, args ...string) payload.Report {
		t.Helper()
		res, out := f.runIn(t, "egress_payload", task, sandbox.SelfPath, append([]string{"payload"}, args...)...)
		var rep payload.Report
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rep); err != nil || res.ExitCode != 0 {
			t.Fatalf("%v: exit %d, %q: %v", args, res.ExitCode, out, err)
		}
		t.Logf("%v: %s", args, rep.Evidence)
		return rep
	}
	api, opaque := "api.example.com:"+s.apiPort, "opaque.example.com:"+s.apiPort
	if rep := payloadRun("inspect", "tls-front", opaque, "opaque.example.com"); !rep.Succeeded {
		t.Errorf("an honest ClientHello into an opaque tunnel failed: %s", rep.Evidence)
	}
	for _, c := range [][2]string{{opaque, "api.example.com"}, {api, "evil.example.com"}} {
		if rep := payloadRun("inspect", "tls-front", c[0], c[1]); rep.Succeeded || !strings.Contains(rep.Detail["error"], "access denied") {
			t.Errorf("fronted ClientHello %s into %s: %s", c[1], c[0], rep.Evidence)
		}
	}
	rep := payloadRun("inspect", "pipeline", api, "GET /repos/acme/a", "DELETE /repos/acme/a")
	if rep.Succeeded || rep.Detail["status1"] != "200" || rep.Detail["status2"] != "403" || rep.Detail["reason2"] == "" {
		t.Errorf("pipelined: %+v", rep)
	}

	sink := s.sink.Addr().String()
	if rep := payloadRun("budget", "tunnel-send", sink, "400"); !rep.Succeeded {
		t.Errorf("a tunnel within its budget: %s", rep.Evidence)
	}
	s.received(t)
	if rep := payloadRun("budget", "tunnel-send", sink, "1500"); rep.Succeeded {
		t.Errorf("a tunnel past its budget carried everything: %s", rep.Evidence)
	}
	if n := s.received(t); n != 1000 {
		t.Errorf("the sink received %d bytes, want exactly the budget's 1000", n)
	}
	var crossing, alert bool
	f.mu.Lock()
	for _, ev := range f.seen {
		crossing = crossing || ev.Context.Event == audit.EventEgressBudgetReached && strings.Contains(ev.Reason, "bytesOut of 1000")
		alert = alert || ev.Context.Alert == monitor.RuleEgressBudget
	}
	f.mu.Unlock()
	if !crossing || !alert {
		t.Errorf("budget crossing recorded %v, alert raised %v", crossing, alert)
	}
	f.verify(t)
}

// TestEgressBudgetsInSession: in a session, a task's budget holds per
// step and the session's for its whole life: two steps of 800 bytes each
// pass the task's 1000 each, and the second passes the session's 1200 by
// exactly 400.
func TestEgressBudgetsInSession(t *testing.T) {
	testutil.RequireRoot(t)
	s := newEgressServers(t)
	f := newEgressFixture(t, s)
	ss, err := f.enf.OpenSession(context.Background(), enforcer.SessionRequest{Task: "budget"})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close(context.Background())
	for i, want := range []struct {
		answer string
		sunk   int64
	}{{"800", 800}, {"", 400}} {
		var out bytes.Buffer
		res, err := ss.Exec(context.Background(), enforcer.StepRequest{Tool: "egress_payload", Command: sandbox.SelfPath,
			Args: []string{"payload", "tunnel-send", s.sink.Addr().String(), "800"}, Stdout: &out, Notices: io.Discard})
		var rep payload.Report
		if err != nil || res.ExitCode != 0 || json.Unmarshal(out.Bytes(), &rep) != nil {
			t.Fatalf("step %d: exit %d %v %q", i+1, res.ExitCode, err, out.String())
		}
		if rep.Detail["answer"] != want.answer {
			t.Errorf("step %d: %s", i+1, rep.Evidence)
		}
		if n := s.received(t); n != want.sunk {
			t.Errorf("step %d: the sink received %d bytes, want %d", i+1, n, want.sunk)
		}
	}
}

// TestCredentialFileHidden: a credential's file is never seen by a
// sandbox, even in a tree it binds, and a workspace holding it (which
// would be copied in whole) is refused.
func TestCredentialFileHidden(t *testing.T) {
	testutil.RequireRoot(t)
	dir, err := os.MkdirTemp("/var/tmp", "airlock-cred-") // not under /tmp, which the sandbox makes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // readable by the sandbox's uid, but for the hiding
		t.Fatal(err)
	}
	token := filepath.Join(dir, "token")
	secret := "file-secret-" + randomHex(t)
	if err := os.WriteFile(token, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`{
  "toolScopes": {"sh": {"allow": [{"name": "sh", "command": "sh", "argPatterns": [["-c"]], "allowExtraArgs": true}],
    "filesystem": {"readOnly": ["/usr", "/bin", "/lib", "/lib64", "/etc", %[1]q]}}},
  "egress": {"taskAllowlist": {"sh": [{"host": "api.example.com", "inspect": true}]},
    "credentials": [{"name": "c", "host": "api.example.com", "scheme": "bearer", "fromFile": %[2]q}]}
}`, dir, token)
	f := newFixtureWith(t, src, false, standInResolver{})
	res, out := f.runIn(t, "sh", "sh", "sh", "-c", "cat "+token+"; echo END")
	if res.ExitCode != 0 || !strings.Contains(out, "END") || strings.Contains(out, secret) {
		t.Errorf("exit %d: %q", res.ExitCode, out)
	}
	var o bytes.Buffer
	res, err = f.enf.Run(context.Background(), enforcer.Request{Tool: "sh", Command: "sh", Args: []string{"-c", "true"}, Workspace: dir, Stdout: &o, Stderr: &o})
	if err == nil || res.ExitCode != enforcer.ExitSetup || !strings.Contains(err.Error(), "which no sandbox may see") {
		t.Errorf("a workspace holding the credential's file: exit %d, %v", res.ExitCode, err)
	}
}
