package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/policy"
)

// podmanLab is an image holding airlock's own binary as the attacker,
// pinned by digest, and a policy whose task allows one loopback server.
type podmanLab struct {
	airlock string // the airlock binary, also /bin/airlock in the image
	image   string // pinned reference
	policy  *policy.Loaded
	allowed *httptest.Server
	denied  *httptest.Server
	hits    [2]atomic.Int32 // requests that reached allowed, denied
	audit   string
	podman  *testutil.Podman
}

// newPodmanLab builds the binary and the image and removes the image when
// the test ends.
func newPodmanLab(t *testing.T) *podmanLab {
	t.Helper()
	lab := &podmanLab{podman: testutil.RootfulPodman(t)}
	dir := t.TempDir()
	lab.airlock = testutil.StaticAirlock(t, dir)
	tarPath := filepath.Join(dir, "root.tar")
	writeImageTar(t, tarPath, lab.airlock)
	lab.image = lab.podman.Import(t, tarPath, fmt.Sprintf("localhost/airlock-export-test:%d", os.Getpid()))

	handler := func(i int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { lab.hits[i].Add(1); fmt.Fprintln(w, "reached") }
	}
	lab.allowed = httptest.NewServer(handler(0))
	lab.denied = httptest.NewServer(handler(1))
	t.Cleanup(lab.allowed.Close)
	t.Cleanup(lab.denied.Close)
	pol := fmt.Sprintf(`{
  "toolScopes": {"attack": {
    "allow": [{"name": "payload", "command": "/bin/airlock", "argPatterns": [["payload"]], "allowExtraArgs": true}],
    "caps": {"memoryMb": 64, "processCount": 16, "diskWriteMb": 8, "cpuSeconds": 10, "wallSeconds": 30}}},
  "egress": {"default": "deny", "taskAllowlist": {"lab": [%q]}}
}`, lab.allowed.Listener.Addr().String())
	var err error
	if lab.policy, err = policy.Parse("lab.json", []byte(pol)); err != nil {
		t.Fatal(err)
	}
	lab.audit = filepath.Join(dir, "audit.jsonl")
	return lab
}

// writeImageTar writes the image's root: /bin/airlock, and the empty
// directories the run line mounts over, /workspace owned by uid 65534.
func writeImageTar(t *testing.T, path, airlock string) {
	t.Helper()
	testutil.WriteTar(t, path, []testutil.TarEntry{
		{Name: "bin", Dir: true, Mode: 0o755}, {Name: "tmp", Dir: true, Mode: 0o1777},
		{Name: "workspace", Dir: true, Mode: 0o755, UID: 65534}, {Name: "findings", Dir: true, Mode: 0o755},
		{Name: "etc", Dir: true, Mode: 0o755}, {Name: "bin/airlock", Mode: 0o755, FromFile: airlock},
	})
}

// netnsNames lists the host's named network namespaces.
func netnsNames(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

// run exports the payload for the lab's task, runs the script the export
// printed, and returns the payload's last report and the exit status. It
// checks that the run left no namespace or container behind.
func (lab *podmanLab) run(t *testing.T, task string, args ...string) (payload.Report, int) {
	t.Helper()
	tk, err := Resolve(lab.policy, Request{Tool: "attack", Task: task, Image: lab.image,
		Command: append([]string{"/bin/airlock", "payload"}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Podman(tk, PodmanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := netnsNames(t)
	cmd := exec.Command("sh", "-c", out.Script)
	// podman's monitor (conmon) writes a file named oom into its working
	// directory when the container is killed for memory: not the package's.
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "AIRLOCK="+lab.airlock, "AIRLOCK_AUDIT="+lab.audit, "AIRLOCK_PODMAN_FLAGS="+testutil.PodmanFlags)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if status == 125 || stdout.Len() == 0 {
		t.Fatalf("payload %v: exit %d, nothing ran?\nstdout: %s\nstderr: %s", args, status, stdout.String(), stderr.String())
	}
	// The script names its namespace for its shell's pid ($$): other
	// tests on this host may make namespaces of their own meanwhile.
	if own := "airlock-" + strconv.Itoa(cmd.Process.Pid); slices.Contains(netnsNames(t), own) && !slices.Contains(before, own) {
		t.Errorf("the script left its network namespace %s", own)
	}
	if ps := strings.TrimSpace(lab.podman.Run(t, "ps", "--all", "--quiet", "--filter", "ancestor="+lab.image)); ps != "" {
		t.Errorf("the script left containers %s", ps)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var r payload.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("payload %v: %v: %q (stderr %s)", args, err, stdout.String(), stderr.String())
	}
	t.Logf("payload %v: exit %d: %s", args, status, r.Evidence)
	return r, status
}

// TestPodmanExportContains runs what the export prints, for real, and
// attacks from inside the container: egress past the proxy and through
// it, a fork bomb, memory, a write past the tmpfs size, the seccomp
// profile's refusals; and finds the proxy's refusal in the audit log.
func TestPodmanExportContains(t *testing.T) {
	lab := newPodmanLab(t)
	allowedURL, deniedURL := lab.allowed.URL+"/", lab.denied.URL+"/"
	_, allowedPort, _ := net.SplitHostPort(lab.allowed.Listener.Addr().String())

	t.Run("privileges", func(t *testing.T) {
		r, _ := lab.run(t, "lab", "hello")
		want := map[string]string{"uid": "65534", "euid": "65534", "capEff": "0000000000000000",
			"capBnd": "0000000000000000", "noNewPrivs": "1", "seccomp": "2"}
		for k, v := range want {
			if r.Detail[k] != v {
				t.Errorf("%s = %q, want %q", k, r.Detail[k], v)
			}
		}
	})
	t.Run("allowed host through the proxy", func(t *testing.T) {
		r, _ := lab.run(t, "lab", "http-get", allowedURL)
		if r.Detail["status"] != "200" || lab.hits[0].Load() == 0 {
			t.Errorf("allowed host: %s (server reached %d times)", r.Evidence, lab.hits[0].Load())
		}
	})
	t.Run("host not on the allowlist", func(t *testing.T) {
		r, _ := lab.run(t, "lab", "http-get", deniedURL)
		if r.Detail["status"] != "403" || !strings.Contains(r.Detail["reason"], "not in the task's egress allowlist") || lab.hits[1].Load() != 0 {
			t.Errorf("denied host: %s (server reached %d times)", r.Evidence, lab.hits[1].Load())
		}
	})
	t.Run("no egress without a task", func(t *testing.T) {
		r, _ := lab.run(t, "", "http-get", allowedURL)
		if r.Succeeded || r.Detail["status"] == "200" {
			t.Errorf("with no task the container reached the proxy: %s", r.Evidence)
		}
	})
	for _, attempt := range [][]string{
		{"connect", lab.allowed.Listener.Addr().String()}, // the host's loopback listener, directly
		{"connect", "[::1]:" + allowedPort},
		{"routes"},
	} {
		t.Run("direct "+strings.Join(attempt, " "), func(t *testing.T) {
			if r, _ := lab.run(t, "lab", attempt...); r.Succeeded {
				t.Errorf("got out past the proxy: %s", r.Evidence)
			}
		})
	}
	t.Run("fork bomb", func(t *testing.T) {
		r, status := lab.run(t, "lab", "forkbomb", "200")
		n, _ := strconv.Atoi(r.Detail["processes"])
		if status != 0 || r.Succeeded || n >= 16 || r.Errno != "EAGAIN" {
			t.Errorf("fork bomb: exit %d, %s", status, r.Evidence)
		}
	})
	t.Run("memory", func(t *testing.T) {
		r, status := lab.run(t, "lab", "membomb", "1024")
		if status != 137 || r.Succeeded {
			t.Errorf("memory bomb: exit %d, %s; want 137 (OOM kill)", status, r.Evidence)
		}
	})
	for _, dir := range []string{"/tmp", "/workspace", "/findings"} {
		t.Run("fill "+dir, func(t *testing.T) {
			r, _ := lab.run(t, "lab", "fill", dir)
			mib, _ := strconv.Atoi(r.Detail["mib"])
			if r.Succeeded || r.Errno != "ENOSPC" || mib > 8 || mib < 6 {
				t.Errorf("fill %s: %s; want ENOSPC at about 8 MiB", dir, r.Evidence)
			}
		})
	}
	t.Run("read-only root", func(t *testing.T) {
		if r, _ := lab.run(t, "lab", "write-file", "/bin/planted"); r.Succeeded || r.Errno != "EROFS" {
			t.Errorf("write to the root: %s", r.Evidence)
		}
	})
	// Refusals only the seccomp profile makes (an unprivileged process
	// without it would succeed), with airlock's errno.
	for _, c := range []struct {
		args  []string
		errno string
	}{
		{[]string{"socket", "vsock"}, "EAFNOSUPPORT"},
		{[]string{"io-uring"}, "ENOSYS"},
		{[]string{"clone3"}, "ENOSYS"},
		{[]string{"personality"}, "EPERM"},
		{[]string{"keyctl"}, "EPERM"},
		{[]string{"clone-newuser"}, "EPERM"},
		{[]string{"tcp-fastopen", "inside"}, "EPERM"},
		// socket(2)'s allowlist, in the profile as rules on several
		// arguments.
		{[]string{"mptcp-connect", "proxy"}, "EPROTONOSUPPORT"},
		{[]string{"unix-connect", "@airlock-export-test"}, "EACCES"},
		{[]string{"socket", "netlink"}, "EAFNOSUPPORT"},
	} {
		t.Run("seccomp "+strings.Join(c.args, " "), func(t *testing.T) {
			if r, _ := lab.run(t, "lab", c.args...); r.Succeeded || r.Errno != c.errno {
				t.Errorf("%s, want %s", r.Evidence, c.errno)
			}
		})
	}
	t.Run("audit", func(t *testing.T) {
		f, err := os.Open(lab.audit)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := audit.Verify(f); err != nil {
			t.Errorf("audit chain: %v", err)
		}
		f.Seek(0, 0)
		_, deniedPort, _ := net.SplitHostPort(lab.denied.Listener.Addr().String())
		var allow, deny bool
		for sc := bufio.NewScanner(f); sc.Scan(); {
			var ev audit.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Kind != "egress" || ev.Context.Task != "lab" {
				continue
			}
			port := strconv.Itoa(int(ev.Context.Port))
			allow = allow || ev.Decision == "allow" && port == allowedPort
			deny = deny || ev.Decision == "deny" && port == deniedPort && strings.Contains(ev.Reason, "not in the task's egress allowlist")
		}
		if !allow || !deny {
			t.Errorf("audit: allowed connection recorded %t, refusal recorded %t", allow, deny)
		}
	})
}
