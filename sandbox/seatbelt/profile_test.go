package seatbelt

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden profiles in testdata")

// session is the private directory of a session, as on a Mac.
const session = "/private/var/folders/x1/abc/T/airlock-s1"

// typical is the Spec of a command in a session with a proxy: the
// default search path and view, Homebrew on the search path.
func typical() Spec {
	return Spec{
		ExecFiles: []string{"/usr/bin/make", "/opt/homebrew/Cellar/gh/2.40.1/bin/gh"},
		ExecTrees: []string{"/usr/local/bin", "/usr/bin", "/bin", "/opt/homebrew/bin"},
		NoExec:    []string{"/usr/bin/sudo", "/usr/bin/su", "/usr/bin/login"},
		Read:      []string{"/usr", "/bin", "/sbin", "/etc", "/private/etc", "/usr/local/bin", "/usr/bin", "/opt/homebrew/bin"},
		Write:     []string{session + "/workspace", session + "/tmp", session + "/findings"},
		Hide:      []string{"/private/etc/airlock/policy.json"},
		Traverse:  []string{"/usr", "/usr/local", "/opt", "/opt/homebrew", "/private", "/private/var", "/private/var/folders"},
		ProxyPort: 49152,
	}
}

func TestProfileGolden(t *testing.T) {
	noNet := typical()
	noNet.ProxyPort = 0
	trustd := typical()
	trustd.Trustd = true
	for name, s := range map[string]Spec{"typical": typical(), "nonet": noNet, "trustd": trustd} {
		t.Run(name, func(t *testing.T) {
			got, err := Profile(s)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", name+".sb")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("profile differs from %s (go test -run TestProfileGolden -update):\n%s", file, got)
			}
			if _, err := Parse(got); err != nil {
				t.Errorf("the generated profile does not parse: %v", err)
			}
		})
	}
}

// allowed collects, per operation, the filters of the allow rules that
// name it (an operation named with a wildcard is listed under it).
func allowed(t *testing.T, p *Parsed) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range p.Rules {
		if !r.Allow {
			continue
		}
		for _, op := range r.Ops {
			if len(r.Filters) == 0 {
				out[op] = append(out[op], "*")
			}
			for _, f := range r.Filters {
				out[op] = append(out[op], f.Name+" "+strings.Join(f.Args, " "))
			}
		}
	}
	return out
}

// TestProfileAllowsOnlyWhatItSays reads the generated profile as
// sandbox-exec would and checks what each kind of operation is allowed
// on: writes only in the copies, execution only of the program and the
// search path, connections only to the proxy (and the copies' unix
// sockets), Mach services only by name.
func TestProfileAllowsOnlyWhatItSays(t *testing.T) {
	s := typical()
	text, err := Profile(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	a := allowed(t, p)
	writes := map[string]bool{}
	for _, w := range s.Write {
		writes["subpath "+w] = true
	}
	for op, fs := range a {
		switch {
		case strings.HasPrefix(op, "file-write"), op == "file*", op == "network-bind", op == "network-inbound":
			for _, f := range fs {
				if !writes[f] && f != "literal /dev/null" && f != "subpath /dev/fd" {
					t.Errorf("%s allowed on %s, outside the copies", op, f)
				}
			}
		case strings.HasPrefix(op, "process-exec"):
			for _, f := range fs {
				name, p, _ := strings.Cut(f, " ")
				if !(name == "literal" && slices.Contains(s.ExecFiles, p) || name == "subpath" && slices.Contains(s.ExecTrees, p)) {
					t.Errorf("exec allowed on %s", f)
				}
			}
		case op == "network-outbound":
			for _, f := range fs {
				if !writes[f] && f != "remote ip localhost:49152" {
					t.Errorf("connections allowed to %s", f)
				}
			}
		case op == "mach-lookup":
			for _, f := range fs {
				if !strings.HasPrefix(f, "global-name com.apple.system.opendirectoryd.") {
					t.Errorf("Mach service %s allowed", f)
				}
			}
		case op == "default" || strings.HasSuffix(op, "*") && op != "file-read*" && op != "process-info*":
			t.Errorf("allow %s: a wildcard or default allowance", op)
		}
		for _, f := range fs {
			if f == "*" && op != "process-fork" && op != "ipc-posix-sem" {
				t.Errorf("allow %s without a filter", op)
			}
		}
	}
	for _, home := range []string{"/Users", "/Volumes", "/private/var/folders", "/"} {
		for _, f := range a["file-read*"] {
			if f == "subpath "+home {
				t.Errorf("reads allowed under %s", home)
			}
		}
	}
	// The set-id programs are refused after the search path is allowed:
	// the later rule wins.
	var allowAt, denyAt int
	for _, r := range p.Rules {
		if slices.Contains(r.Ops, "process-exec") {
			if r.Allow {
				allowAt = r.Line
			} else {
				denyAt = r.Line
			}
		}
	}
	if denyAt < allowAt {
		t.Errorf("set-id programs denied at line %d, before the exec allowance at %d", denyAt, allowAt)
	}
}

func TestProfileTrustdOnlyByWeakerMode(t *testing.T) {
	for _, on := range []bool{false, true} {
		s := typical()
		s.Trustd = on
		text, _ := Profile(s)
		if got := strings.Contains(text, `"com.apple.trustd.agent"`); got != on {
			t.Errorf("Trustd %v: trustd allowed: %v", on, got)
		}
	}
}

func TestProfileNoProxyNoNetwork(t *testing.T) {
	s := typical()
	s.ProxyPort = 0
	text, _ := Profile(s)
	if strings.Contains(text, "remote ip") {
		t.Errorf("a profile without a proxy allows a connection:\n%s", text)
	}
}

func TestSpecCheckRefusesWhatAProfileCannotHold(t *testing.T) {
	for _, p := range []string{"relative", "/a/../b", "/a/", `/a"b`, `/a\b`, "/a\nb", "/a\x7fb", "/a\xffb", ""} {
		s := typical()
		s.Read = append(s.Read, p)
		if _, err := Profile(s); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
	s := typical()
	s.ProxyPort = 70000
	if _, err := Profile(s); err == nil {
		t.Error("port 70000 accepted")
	}
	s = typical()
	s.Read = append(s.Read, "/Users/dév/ünïcode path")
	text, err := Profile(s)
	if err != nil {
		t.Fatalf("a path with spaces and non-ASCII letters: %v", err)
	}
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(allowed(t, p)["file-read*"], "subpath /Users/dév/ünïcode path") {
		t.Error("the path did not come through the profile's string as written")
	}
}
