package seatbelt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const head = "(version 1)\n(deny default)\n"

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"empty", "", "empty profile"},
		{"no version", "(deny default)", "must begin with (version 1)"},
		{"version 2", "(version 2)\n(deny default)", "want (version 1)"},
		{"version twice", head + "(version 1)", "must come first, once"},
		{"no deny default", "(version 1)\n(allow process-fork)", "must (deny default)"},
		{"allow default", head + "(allow default)", "(allow default) refused"},
		{"default with a filter", "(version 1)\n(deny default (literal \"/x\"))", "does not apply to operation default"},
		{"default with an operation", "(version 1)\n(deny default process-fork)", "default stands alone"},
		{"import", head + "(import \"system.sb\")", "import refused"},
		{"unknown form", head + "(define x 1)", "unknown form (define"},
		{"unknown operation", head + "(allow file-read-everything)", `unknown operation "file-read-everything"`},
		{"no operation", head + "(allow (literal \"/x\"))", "at least one operation"},
		{"unknown filter", head + "(allow file-read* (glob \"/x/*\"))", `unknown filter "glob"`},
		{"relative path", head + "(allow file-read* (subpath \"usr\"))", `path "usr" is not absolute`},
		{"path not a string", head + "(allow file-read* (subpath usr))", "want a string, got a symbol"},
		{"arity", head + "(allow file-read* (literal \"/a\" \"/b\"))", "takes 1 argument"},
		{"ip address", head + "(allow network-outbound (remote ip \"169.254.169.254:80\"))", "Seatbelt cannot name other hosts"},
		{"port 0", head + "(allow network-outbound (remote ip \"localhost:0\"))", "the port must be"},
		{"port words", head + "(allow network-outbound (remote ip \"localhost:http\"))", "the port must be"},
		{"ip kind", head + "(allow network-outbound (remote sctp \"*:*\"))", "want one of ip"},
		{"filter for another operation", head + "(allow mach-lookup (literal \"/x\"))", "does not apply to operation mach-lookup"},
		{"sysctl filter on files", head + "(allow file-read* (sysctl-name \"hw.ncpu\"))", "does not apply to operation file-read*"},
		{"target kind", head + "(allow signal (target everyone))", "want one of self"},
		{"unclosed list", head + "(allow file-read* (literal \"/x\")", "list not closed"},
		{"stray paren", head + ")", "unexpected )"},
		{"unclosed string", head + "(allow file-read* (literal \"/x))", "string not closed"},
		{"unknown escape", head + `(allow file-read* (literal "/x\u0041"))`, `unknown escape \u`},
		{"control character", head + "(allow file-read* (literal \"/x\ty\"))", "control character 0x09"},
		{"bad regex", head + `(allow file-read* (regex #"^/dev/(tty"))`, "regular expression"},
		{"regex over lines", head + "(allow file-read* (regex #\"^/a\n\"))", "line break in a regular expression"},
		{"quote", head + "(allow file-read* '(literal \"/x\"))", "quoting"},
		{"bad hash", head + "(allow file-read* (file-mode #q1))", "#q1 is not a datum"},
		{"bad octal", head + "(allow file-read* (file-mode #o9))", "#o9 is not a number"},
		{"bad symbol", head + "(allow file-read* (literal \"/x\") {)", `"{" is not a symbol`},
		{"bad modifier", head + "(allow file-read* (with loudly))", "unknown modifier"},
		{"require-not of two", head + "(allow file-read* (require-not (literal \"/a\") (literal \"/b\")))", "takes one filter"},
		{"not UTF-8", head + "; \xff\n", "not valid UTF-8"},
		{"atom at the top", head + "allow", "a profile holds only forms"},
		{"too deep", head + "(allow file-read* " + strings.Repeat("(require-all ", 20) + strings.Repeat(")", 21), "nested deeper"},
		{"too large", head + "; " + strings.Repeat("x", MaxProfile), "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%q) = %v, want an error with %q", c.src, err, c.want)
			}
		})
	}
}

func TestParsePositions(t *testing.T) {
	_, err := Parse(head + "(allow file-read*\n   (subpath \"rel\"))")
	if err == nil || !strings.HasPrefix(err.Error(), "profile:4:13:") {
		t.Errorf("error %v: want it at line 4, column 13", err)
	}
}

// TestParseAccepts reads what real profiles say (Codex's, Chromium's and
// sandbox-runtime's constructs, written afresh) and what airlock writes.
func TestParseAccepts(t *testing.T) {
	src := head + `
; a comment
(allow file-read* file-test-existence (subpath "/System") (literal "/"))
(allow file-write-data (require-all (path "/dev/null") (vnode-type CHARACTER-DEVICE)))
(allow file-read* file-write* (require-all (regex #"^/dev/ttys[0-9]+") (extension "com.apple.sandbox.pty")))
(allow network-outbound (remote ip "localhost:8080") (remote tcp "*:443"))
(allow network-outbound (literal "/private/var/run/syslog"))
(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))
(allow sysctl-read (sysctl-name "hw.ncpu") (sysctl-name-prefix "hw.optional.") (sysctl-name-regex #"^net.routetable"))
(allow sysctl-write (sysctl-name "kern.grade_cputype"))
(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))
(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient"))
(allow system-mac-syscall (require-all (mac-policy-name "Sandbox") (mac-syscall-number 67)))
(allow file-read* (require-not (literal "/x")) (file-mode #o4000))
(deny file-write-unlink (subpath "/x") (with message "tag"))
(allow signal (target same-sandbox))
(allow ipc-posix-sem)
`
	p, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 16 {
		t.Errorf("%d rules, want 16", len(p.Rules))
	}
	r := p.Rules[2]
	if !r.Allow || r.Ops[0] != "file-write-data" || r.Filters[0].Name != "require-all" || len(r.Filters[0].Sub) != 2 || r.Filters[0].Sub[0].Args[0] != "/dev/null" {
		t.Errorf("rule 3 read as %+v", r)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sb")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(string(b))
	}
	f.Add(head + `(allow file-read* (regex #"^/a\"b"))`)
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse(src)
		if err != nil {
			return
		}
		// Whatever parses denies by default and never allows by default.
		deny := false
		for _, r := range p.Rules {
			if len(r.Ops) == 1 && r.Ops[0] == "default" {
				if r.Allow {
					t.Fatal("allow default parsed")
				}
				deny = true
			}
		}
		if !deny {
			t.Fatal("a profile without deny default parsed")
		}
	})
}
