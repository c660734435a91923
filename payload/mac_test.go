//go:build unix

package payload

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runMac runs a macOS payload in this process and returns its report.
func runMac(t *testing.T, name string, args ...string) Report {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	code := macPayloads[name](args)
	os.Stdout = old
	w.Close()
	out, _ := io.ReadAll(r)
	reps := Parse(out)
	if code != ExitReported || len(reps) != 1 {
		t.Fatalf("%s: exit %d, output %q", name, code, out)
	}
	return reps[0]
}

// TestMacPayloadsOutsideASandbox runs the macOS battery's payloads where
// nothing confines them: each must get through, and say so, as it would
// on a Mac whose profile failed.
func TestMacPayloadsOutsideASandbox(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("canary"), 0o600)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "upstream") }))
	defer srv.Close()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"mac-read", []string{secret}, "read 6 bytes"},
		{"mac-write", []string{dir}, "created " + dir},
		{"mac-connect", []string{lis.Addr().String()}, "connected"},
		{"mac-hardlink", []string{secret, filepath.Join(dir, "link")}, "read 6 bytes"},
		{"mac-exec", []string{"/bin/sh", "-c", "exit 0"}, "ran /bin/sh"},
		{"mac-get-noproxy", []string{srv.URL}, "HTTP 200"},
	} {
		rep := runMac(t, c.name, c.args...)
		if !rep.Succeeded || !strings.Contains(rep.Evidence, c.want) {
			t.Errorf("%s: %+v, want it through with %q", c.name, rep, c.want)
		}
	}
}

func TestMacPayloadsRefused(t *testing.T) {
	rep := runMac(t, "mac-read", "/nonexistent/secret")
	if rep.Succeeded || rep.Errno != "ENOENT" {
		t.Errorf("read of a missing file: %+v", rep)
	}
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := lis.Addr().String()
	lis.Close()
	if rep := runMac(t, "mac-connect", addr); rep.Succeeded || rep.Errno != "ECONNREFUSED" {
		t.Errorf("connect to a closed port: %+v", rep)
	}
	if rep := runMac(t, "mac-exec", "/bin/sh", "-c", "exit 3"); rep.Succeeded {
		t.Errorf("a program that failed: %+v", rep)
	}
}

// TestMacGetThroughProxy: mac-get goes through $HTTP_PROXY, and reads a
// refusal by the proxy's header.
func TestMacGetThroughProxy(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Host != "upstream.example" {
			t.Errorf("the proxy got %q", r.URL)
		}
		w.Header().Set(macReasonHeader, "egress gate: denied")
		w.WriteHeader(http.StatusForbidden)
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	rep := runMac(t, "mac-get", "http://upstream.example/")
	if rep.Succeeded || rep.Detail["status"] != "403" || rep.Detail["reason"] != "egress gate: denied" {
		t.Errorf("report %+v", rep)
	}
}
