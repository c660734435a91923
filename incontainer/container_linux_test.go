package incontainer

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-sandbox/airlock/doctor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
)

// profile is a seccomp setting of the container.
type profile struct {
	name string
	// opt is podman's --security-opt seccomp= value; "" is its default.
	opt string
	// netns: the profile lets the sandbox make a network namespace.
	netns bool
	// extra are more podman run flags.
	extra []string
}

// lab is what every container run shares: the static binary, the
// image's root, host servers on loopback (the containers share the host's
// network: --network host) that count what reaches them.
type lab struct {
	dir     string // readable by all: the image tar, profiles, results
	tar     string
	allowed *httptest.Server
	denied  *httptest.Server
	hits    [2]atomic.Int32   // requests that reached allowed, denied
	direct  *testutil.Counted // a listener only a direct connection would reach
	udp     *testutil.Counted // a UDP socket only a datagram past the proxy would reach
}

// noNetNSProfile lets everything through but network namespaces (clone
// and unshare with CLONE_NEWNET: EPERM; clone3, whose flags no profile
// can read: ENOSYS), as a container profile that refuses them does.
const noNetNSProfile = `{"defaultAction": "SCMP_ACT_ALLOW",
 "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": []}, {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": []}],
 "syscalls": [
  {"names": ["clone", "unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
   "args": [{"index": 0, "value": 1073741824, "valueTwo": 1073741824, "op": "SCMP_CMP_MASKED_EQ"}]},
  {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}]}
`

// noLandlockProfile is noNetNSProfile that refuses Landlock too (ENOSYS,
// as a kernel without it answers).
var noLandlockProfile = strings.Replace(noNetNSProfile, `{"names": ["clone3"]`,
	`{"names": ["landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
  {"names": ["clone3"]`, 1)

// TestInsideContainers runs airlock inside rootful and rootless podman
// containers, with podman's default seccomp profile, with none, and with
// one that refuses network namespaces: doctor says what the container
// leaves airlock, a run's receipt says which mechanism holds each
// control, attacks from inside are refused (the egress proxy the only way
// out, by a network namespace of the sandbox's own or, without one, by
// Landlock and seccomp), and the demo's attempts are all contained.
func TestInsideContainers(t *testing.T) {
	testutil.RequirePodman(t)
	l := newLab(t)
	profiles := []profile{{name: "default", netns: true}, {name: "unconfined", opt: "unconfined", netns: true},
		{name: "no-netns", opt: filepath.Join(l.dir, "no-netns.json")}}
	if err := os.WriteFile(profiles[2].opt, []byte(noNetNSProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.dir, "no-landlock.json"), []byte(noLandlockProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rootless := range []bool{false, true} {
		name := map[bool]string{false: "rootful", true: "rootless"}[rootless]
		t.Run(name, func(t *testing.T) {
			p := testutil.RootfulPodman(t)
			if rootless {
				p = testutil.RootlessPodman(t)
			}
			image := p.Import(t, l.tar, fmt.Sprintf("localhost/airlock-incontainer-%s:%d", name, os.Getpid()))
			for _, prof := range profiles {
				t.Run(prof.name, func(t *testing.T) {
					c := &ctr{lab: l, podman: p, image: image, prof: prof}
					c.doctor(t)
					c.attacks(t)
					c.demo(t)
					if !prof.netns {
						c.requireNetNS(t)
					}
				})
			}
			c := &ctr{lab: l, podman: p, image: image, prof: profiles[2]}
			t.Run("session", c.session)
			if !rootless {
				c := &ctr{lab: l, podman: p, image: image, prof: profile{name: "no-netns-no-landlock", opt: filepath.Join(l.dir, "no-landlock.json"),
					extra: []string{"--security-opt", "unmask=ALL"}}}
				t.Run(c.prof.name, c.weakerMode)
			}
			// This test's containers only: other tests (export's) run
			// podman on this host at the same time.
			if ps := strings.TrimSpace(p.Run(t, "ps", "--all", "--quiet", "--filter", "ancestor="+image)); ps != "" {
				t.Errorf("containers left: %s", ps)
			}
		})
	}
}

// newLab builds the binary, the image's root and the host's servers.
func newLab(t *testing.T) *lab {
	l := &lab{dir: testutil.SharedDir(t, "airlock-incontainer-")}
	bin := testutil.StaticAirlock(t, l.dir)
	handler := func(i int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { l.hits[i].Add(1); fmt.Fprintln(w, "reached") }
	}
	l.allowed, l.denied = httptest.NewServer(handler(0)), httptest.NewServer(handler(1))
	t.Cleanup(l.allowed.Close)
	t.Cleanup(l.denied.Close)
	l.direct, l.udp = testutil.CountingListener(t), testutil.CountingUDP(t)
	pol := fmt.Sprintf(`{
  "toolScopes": {"attack": {
    "allow": [{"name": "payload", "command": "/bin/airlock", "argPatterns": [["payload"]], "allowExtraArgs": true}],
    "caps": {"memoryMb": 128, "processCount": 32, "diskWriteMb": 16, "cpuSeconds": 10, "wallSeconds": 20}}},
  "egress": {"default": "deny", "taskAllowlist": {"attack": [%q]}}
}`, l.allowed.Listener.Addr().String())
	weaker := strings.Replace(pol, `"egress":`, `"weakerModes": ["egress-unenforced"], "egress":`, 1)
	require := strings.Replace(pol, `"egress":`, `"require": ["netns"], "egress":`, 1)
	l.tar = filepath.Join(l.dir, "root.tar")
	testutil.WriteTar(t, l.tar, []testutil.TarEntry{
		{Name: "bin", Dir: true, Mode: 0o755}, {Name: "etc", Dir: true, Mode: 0o755},
		{Name: "tmp", Dir: true, Mode: 0o1777}, {Name: "var", Dir: true, Mode: 0o755}, {Name: "var/tmp", Dir: true, Mode: 0o1777},
		{Name: "out", Dir: true, Mode: 0o755},
		{Name: "bin/airlock", Mode: 0o755, FromFile: bin},
		{Name: "etc/airlock.json", Mode: 0o644, Data: []byte(pol)},
		{Name: "etc/airlock-weaker.json", Mode: 0o644, Data: []byte(weaker)},
		{Name: "etc/airlock-require.json", Mode: 0o644, Data: []byte(require)},
	})
	return l
}

// ctr is one podman and profile.
type ctr struct {
	*lab
	podman *testutil.Podman
	image  string
	prof   profile
}

// run runs airlock with args in a new container and returns its stdout,
// stderr and exit status; with result, airlock's --result file is read
// into it from a directory bound at /out.
func (c *ctr) run(t *testing.T, result any, args ...string) (string, string, int) {
	t.Helper()
	podArgs := []string{"run", "--rm", "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"}
	if c.prof.opt != "" {
		podArgs = append(podArgs, "--security-opt", "seccomp="+c.prof.opt)
	}
	podArgs = append(podArgs, c.prof.extra...)
	var out string
	if result != nil {
		out = testutil.SharedDir(t, "airlock-out-")
		owner := 0
		if c.podman.Rootless {
			owner = testutil.NobodyID
		}
		if err := os.Chown(out, owner, owner); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(out, 0o700); err != nil {
			t.Fatal(err)
		}
		podArgs = append(podArgs, "-v", out+":/out")
	}
	podArgs = append(append(podArgs, c.image, "/bin/airlock"), args...)
	cmd := c.podman.Command(podArgs...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if result != nil {
		b, err := os.ReadFile(filepath.Join(out, "r.json"))
		if err != nil {
			t.Fatalf("airlock %v: no result (exit %d): %v\n%s", args, status, err, stderr.String())
		}
		if err := json.Unmarshal(b, result); err != nil {
			t.Fatal(err)
		}
	}
	return stdout.String(), stderr.String(), status
}

// doctor checks what doctor says the container leaves airlock.
func (c *ctr) doctor(t *testing.T) {
	out, errOut, _ := c.run(t, nil, "doctor", "--json")
	var r doctor.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s\n%s", err, out, errOut)
	}
	if r.Host.Container != "podman (/run/.containerenv)" {
		t.Errorf("doctor: container %q", r.Host.Container)
	}
	want := map[string]doctor.Strength{
		doctor.RequireUserNS: doctor.Strong, doctor.RequireMountNS: doctor.Strong, doctor.RequirePIDNS: doctor.Strong,
		doctor.RequireSeccomp: doctor.Strong, doctor.RequireLandlockNet: doctor.Strong,
		// podman masks parts of /proc: no fresh one.
		doctor.RequireProcFS: doctor.Weak,
		doctor.RequireNetNS:  doctor.Missing, doctor.RequireEgressProxy: doctor.Weak,
	}
	if c.prof.netns {
		want[doctor.RequireNetNS], want[doctor.RequireEgressProxy] = doctor.Strong, doctor.Strong
	}
	for name, s := range want {
		if got, _ := r.Control(name); got.Strength != s {
			t.Errorf("doctor: %s is %s (%s: %s), want %s", name, got.Strength, got.Mechanism, got.Detail, s)
		}
	}
	if sc, _ := r.Control(doctor.RequireSeccomp); c.prof.opt != "unconfined" && !strings.Contains(sc.Detail, "already runs under seccomp mode 2") {
		t.Errorf("doctor: seccomp %q does not name the container's filter", sc.Detail)
	}
}

// result is the part of airlock run's --result file the tests read.
type result struct {
	ExitCode int               `json:"exitCode"`
	Receipt  map[string]string `json:"receipt"`
}

// payloadRun runs airlock's payload args in a sandbox in the container
// and returns its last report and the run's result.
func (c *ctr) payloadRun(t *testing.T, args ...string) (payload.Report, result) {
	t.Helper()
	return c.payloadRunWith(t, "/etc/airlock.json", args...)
}

// payloadRunWith is payloadRun with the policy at pol.
func (c *ctr) payloadRunWith(t *testing.T, pol string, args ...string) (payload.Report, result) {
	t.Helper()
	var res result
	run := append([]string{"run", "--policy", pol, "--tool", "attack", "--task", "attack",
		"--audit", "/tmp/audit.jsonl", "--result", "/out/r.json", "--", "/bin/airlock", "payload"}, args...)
	out, errOut, status := c.run(t, &res, run...)
	reps := payload.Parse([]byte(out))
	if len(reps) == 0 {
		t.Fatalf("payload %v: no report (exit %d)\nstdout %s\nstderr %s", args, status, out, errOut)
	}
	t.Logf("%v: %s", args, reps[len(reps)-1].Evidence)
	return reps[len(reps)-1], res
}

// attacks runs the egress attacks and checks each one's refusal, the
// proxy's allowed path, and the receipt.
func (c *ctr) attacks(t *testing.T) {
	allowed, denied := c.hits[0].Load(), c.hits[1].Load()
	direct, udp := c.direct.Hits.Load(), c.udp.Hits.Load()

	r, res := c.payloadRun(t, "http-get", c.allowed.URL+"/")
	if !r.Succeeded || r.Detail["status"] != "200" || c.hits[0].Load() != allowed+1 {
		t.Errorf("the allowed host through the proxy: %+v", r)
	}
	receipt := map[string]string{
		"proc":       "the host's, bound with its masks",
		"seccomp":    "stacked on a filter airlock runs under",
		"namespaces": "user, pid, mount, network, ipc, uts, cgroup",
		"network":    "empty network namespace, lo only",
	}
	if c.prof.opt == "unconfined" {
		delete(receipt, "seccomp")
	}
	if !c.prof.netns {
		receipt["namespaces"] = "no network namespace: the host refuses one"
		receipt["network"] = "the host's network namespace (the host refuses a new one)"
		receipt["landlock"] = "(on any address: Landlock's rules name ports only); no TCP bind"
	}
	for k, want := range receipt {
		if !strings.Contains(res.Receipt[k], want) {
			t.Errorf("receipt %s = %q, want it to say %q", k, res.Receipt[k], want)
		}
	}

	if r, _ := c.payloadRun(t, "http-get", c.denied.URL+"/"); r.Succeeded || r.Detail["status"] != "403" {
		t.Errorf("a host off the allowlist through the proxy: %+v", r)
	}
	if r, _ := c.payloadRun(t, "http-get", "http://169.254.169.254/latest/meta-data/"); r.Succeeded || r.Detail["status"] != "403" ||
		!strings.Contains(r.Detail["reason"], "always blocked") {
		t.Errorf("the metadata address through the proxy: %+v", r)
	}
	// Past the proxy: with a network namespace of its own nothing is
	// there to reach; without one, the kernel refuses each (EACCES).
	refusedErrno := map[bool]string{true: "", false: "EACCES"}[c.prof.netns]
	for _, args := range [][]string{{"connect", c.direct.Addr}, {"udp-send", c.udp.Addr}} {
		if r, _ := c.payloadRun(t, args...); r.Succeeded || refusedErrno != "" && r.Errno != refusedErrno {
			t.Errorf("%v: %+v, want refused %s", args, r, refusedErrno)
		}
	}
	if r, _ := c.payloadRun(t, "mptcp-connect", "proxy"); r.Succeeded || r.Detail["mptcp"] != "EPROTONOSUPPORT" || r.Detail["tcp"] != "connected" {
		t.Errorf("MPTCP to the proxy's port: %+v", r)
	}
	if !c.prof.netns {
		for _, how := range []string{"bind", "autobind"} {
			if r, _ := c.payloadRun(t, "tcp-listen", how); r.Succeeded || r.Errno != "EACCES" {
				t.Errorf("a TCP server (%s) on the host's network: %+v", how, r)
			}
		}
	}
	if n := c.hits[1].Load() - denied; n != 0 {
		t.Errorf("the denied host was reached %d times", n)
	}
	if n := c.direct.Hits.Load() - direct; n != 0 {
		t.Errorf("the host's listener was reached %d times past the proxy", n)
	}
	if n := c.udp.Hits.Load() - udp; n != 0 {
		t.Errorf("the host's UDP socket got %d datagrams", n)
	}
}

// demo runs airlock demo, offline: every attempt must be contained.
func (c *ctr) demo(t *testing.T) {
	out, errOut, status := c.run(t, nil, "demo", "--offline")
	if status != 0 || !strings.Contains(out, "every control held") {
		t.Errorf("demo: exit %d\n%s\n%s", status, out, errOut)
	}
}

// runArgs is airlock run of payload args under the policy at pol.
func runArgs(pol string, args ...string) []string {
	return append([]string{"run", "--policy", pol, "--tool", "attack", "--task", "attack", "--audit", "/tmp/audit.jsonl",
		"--", "/bin/airlock", "payload"}, args...)
}

// requireNetNS: a policy that requires a network namespace of the
// sandbox's own refuses the run where the container refuses one.
func (c *ctr) requireNetNS(t *testing.T) {
	out, errOut, status := c.run(t, nil, runArgs("/etc/airlock-require.json", "hello")...)
	if status != 125 || !strings.Contains(errOut, "netns") || strings.Contains(out, `"attempt"`) {
		t.Errorf("require netns without one: exit %d\nstdout %s\nstderr %s", status, out, errOut)
	}
}

// weakerMode: where the container refuses network namespaces and
// Landlock, run refuses, naming the weaker mode a policy may accept; a
// policy that accepts it still gets no run here, since the start-up
// probes want Landlock's file rules (the accepted mode's run is
// sandbox's TestUnenforcedEgress, on a kernel whose Landlock the test
// hides without probes: this kernel has ABI 7, not the 1 to 3 that give
// file rules without TCP ones).
func (c *ctr) weakerMode(t *testing.T) {
	out, errOut, status := c.run(t, nil, runArgs("/etc/airlock.json", "connect", c.direct.Addr)...)
	if status != 125 || !strings.Contains(errOut, "egress-unenforced") || strings.Contains(out, `"attempt"`) {
		t.Errorf("without the weaker mode: exit %d\nstdout %s\nstderr %s", status, out, errOut)
	}
	out, errOut, status = c.run(t, nil, runArgs("/etc/airlock-weaker.json", "connect", c.direct.Addr)...)
	if status != 125 || !strings.Contains(errOut, "start-up probe failed: landlock") || strings.Contains(out, `"attempt"`) {
		t.Errorf("with the weaker mode, without Landlock: exit %d\nstdout %s\nstderr %s", status, out, errOut)
	}
}

// session: a session's steps in one sandbox, in a container that stays
// up: started, attacked past the proxy, stopped.
func (c *ctr) session(t *testing.T) {
	name := fmt.Sprintf("airlock-incontainer-session-%d", os.Getpid())
	args := []string{"run", "-d", "--name", name, "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"}
	if c.prof.opt != "" {
		args = append(args, "--security-opt", "seccomp="+c.prof.opt)
	}
	c.podman.Run(t, append(args, c.image, "/bin/airlock", "payload", "sleep")...)
	t.Cleanup(func() { c.podman.Command("rm", "--force", "--time", "0", name).Run() })
	exec := func(args ...string) string {
		return c.podman.Run(t, append([]string{"exec", name, "/bin/airlock"}, args...)...)
	}
	if id := strings.TrimSpace(exec("session", "start", "--policy", "/etc/airlock.json", "--task", "attack", "--id", "s1",
		"--audit", "/tmp/audit.jsonl")); id != "s1" {
		t.Fatalf("session start: %q", id)
	}
	for args, errno := range map[string]string{"connect " + c.direct.Addr: "EACCES", "udp-send " + c.udp.Addr: "EACCES"} {
		out := exec(append([]string{"session", "exec", "s1", "--tool", "attack", "--", "/bin/airlock", "payload"}, strings.Fields(args)...)...)
		if reps := payload.Parse([]byte(out)); len(reps) == 0 || reps[0].Succeeded || reps[0].Errno != errno {
			t.Errorf("session step %s: %s", args, out)
		}
	}
	if out := exec("session", "stop", "s1"); !strings.Contains(out, "stopped") {
		t.Errorf("session stop: %s", out)
	}
}
