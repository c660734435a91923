package egress

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/decision"
)

func inspectGate(t *testing.T, opts EntryConfig, creds ...CredentialConfig) *Gate {
	t.Helper()
	g, err := Compile(Config{
		TaskAllowlist: map[string][]string{"t": {"api.example.com:443", "pypi.org"}},
		Entries:       map[string]map[string]EntryConfig{"t": {"api.example.com:443": opts}},
		Credentials:   creds,
		Local:         FixedAddrs{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var repoRules = EntryConfig{Inspect: true, Rules: []RuleConfig{
	{Name: "read", Methods: []string{"GET", "HEAD"}, Paths: []string{"/repos/acme/*", "/repos/acme/*/**"}},
	{Name: "push", Methods: []string{"POST"}, PathPrefixes: []string{"/upload/"}, Query: map[string][]string{"kind": {"patch", "diff"}}},
	{Name: "no-admin", Deny: true, Paths: []string{"/**/admin/**"}},
	{Name: "no-debug", Deny: true, Headers: map[string][]string{"x-debug": {"*"}}},
	{Name: "socket", Methods: []string{"GET"}, Paths: []string{"/ws"}, WebSocket: true},
	{Name: "plain", Methods: []string{"GET"}, Paths: []string{"/plain"}},
}}

func TestCheckRequest(t *testing.T) {
	e := inspectGate(t, repoRules).Entry("t", "api.example.com:443")
	if !e.Inspected() || !e.HasRules() {
		t.Fatal("entry not inspected")
	}
	cases := []struct {
		method, path, query string
		header              map[string][]string
		upgrade             string
		allow               bool
		rule, reason        string
	}{
		{method: "GET", path: "/repos/acme/widget", allow: true, rule: "read", reason: `allowed by rule "read"`},
		{method: "HEAD", path: "/repos/acme/widget/git/refs", allow: true, rule: "read"},
		{method: "GET", path: "/repos/acme%2Fwidget", reason: `escaped "/"`},
		{method: "GET", path: "/repos/acme/widget/../../evil", reason: "dot segment"},
		{method: "GET", path: "/repos/acme/%2e%2e/evil", reason: "dot segment"},
		{method: "GET", path: "/repos/acme/..;/evil", reason: `has a ";"`},
		{method: "GET", path: "/repos//acme/x", reason: "empty segment"},
		{method: "GET", path: `/repos\acme`, reason: `has a "\"`},
		{method: "GET", path: "/repos/%61cme/widget", allow: true, rule: "read"},
		{method: "GET", path: "/repos/other/widget", reason: "no rule of entry"},
		{method: "DELETE", path: "/repos/acme/widget", reason: "no rule of entry"},
		{method: "POST", path: "/upload/x", query: "kind=patch", allow: true, rule: "push"},
		{method: "POST", path: "/upload/x", query: "kind=patch&kind=tarball", reason: "no rule"},
		{method: "POST", path: "/upload/x", reason: "no rule"},
		{method: "POST", path: "/upload/x", query: "kind=patch;x", reason: "query is malformed"},
		{method: "GET", path: "/repos/acme/x/admin/users", rule: "no-admin", reason: "deny rules win"},
		{method: "GET", path: "/admin/users", rule: "no-admin", reason: "deny rules win"},
		{method: "GET", path: "/repos/acme/admin", rule: "no-admin", reason: "deny rules win"}, // "/repos/acme/admin/" to lenient servers
		{method: "GET", path: "/repos/acme/administer", allow: true, rule: "read"},
		{method: "GET", path: "/repos/acme/x", header: map[string][]string{"X-Debug": {"1"}}, rule: "no-debug", reason: "deny rule"},
		{method: "GET", path: "/ws", upgrade: "websocket", allow: true, rule: "socket"},
		{method: "GET", path: "/plain", upgrade: "websocket", rule: "plain", reason: "not its WebSocket upgrade"},
		{method: "GET", path: "/ws", upgrade: "h2c", reason: `upgrading to "h2c"`},
		{method: "CONNECT", path: "", reason: "CONNECT inside an inspected tunnel"},
	}
	for _, c := range cases {
		q := &Request{Host: "api.example.com:443", Method: c.method, Path: c.path, RawQuery: c.query, Header: c.header, Upgrade: c.upgrade}
		d := e.CheckRequest(q)
		if d.Allowed() != c.allow || d.Rule != c.rule || !strings.Contains(d.Reason, c.reason) || d.Gate != decision.GateEgress {
			t.Errorf("%s %s?%s: %v rule %q: %s", c.method, c.path, c.query, d.Verdict, d.Rule, d.Reason)
		}
	}
}

func TestCheckRequestNoRules(t *testing.T) {
	e := inspectGate(t, EntryConfig{Inspect: true}).Entry("t", "api.example.com:443")
	if d := e.CheckRequest(&Request{Method: "DELETE", Path: "/a/../b"}); !d.Allowed() {
		t.Errorf("no rules: %s", d.Reason)
	}
	if d := e.CheckRequest(&Request{Method: "GET", Path: "/", Upgrade: "websocket"}); d.Allowed() {
		t.Errorf("no rules allowed a WebSocket upgrade: %s", d.Reason)
	}
	var opaque *Entry
	if d := opaque.CheckRequest(&Request{Method: "GET", Path: "/"}); d.Allowed() || opaque.Inspected() || opaque.Protocol() != ProtocolAuto {
		t.Errorf("opaque entry: %s", d.Reason)
	}
}

func TestCompileEntryErrors(t *testing.T) {
	cases := []struct {
		opts EntryConfig
		want string
	}{
		{EntryConfig{Rules: []RuleConfig{{Name: "r"}}}, `need "inspect": true`},
		{EntryConfig{UpstreamCA: "/ca.pem"}, `need "inspect": true`},
		{EntryConfig{Inspect: true, Protocol: ProtocolRaw}, `cannot be "raw"`},
		{EntryConfig{Protocol: "quic"}, "not one of"},
		{EntryConfig{Inspect: true, Rules: []RuleConfig{{Name: "r", Methods: []string{"get"}}}}, `unknown method "get"`},
		{EntryConfig{Inspect: true, Rules: []RuleConfig{{Name: "r", Paths: []string{"repos"}}}}, "does not start with /"},
		{EntryConfig{Inspect: true, Rules: []RuleConfig{{Name: "r", Paths: []string{"/a/***"}}}}, "not ***"},
		{EntryConfig{Inspect: true, Rules: []RuleConfig{{Name: "r"}, {Name: "r"}}}, "used twice"},
		{EntryConfig{Inspect: true, Rules: []RuleConfig{{Name: ""}}}, "needs a name"},
		{EntryConfig{Inspect: true, Rules: []RuleConfig{{Name: "r", Deny: true, WebSocket: true}}}, "for allow rules"},
		{EntryConfig{Inspect: true, Rules: []RuleConfig{{Name: "r", Headers: map[string][]string{"a b": {"x"}}}}}, "not an HTTP token"},
		{EntryConfig{Inspect: true, Rules: []RuleConfig{{Name: "r", Query: map[string][]string{"a": {}}}}}, "lists no values"},
	}
	for _, c := range cases {
		_, err := Compile(Config{
			TaskAllowlist: map[string][]string{"t": {"api.example.com"}},
			Entries:       map[string]map[string]EntryConfig{"t": {"api.example.com": c.opts}},
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
	_, err := Compile(Config{TaskAllowlist: map[string][]string{"t": {"a.example"}},
		Entries: map[string]map[string]EntryConfig{"t": {"b.example": {Inspect: true}}, "u": {"a.example": {}}}})
	if err == nil || !strings.Contains(err.Error(), "not in its allowlist") || !strings.Contains(err.Error(), "no allowlist") {
		t.Errorf("options for entries that are not there: %v", err)
	}
}

// TestPlainCredentialRefusal: a credential is sent over TLS only; a
// request without one, or over TLS, is not refused for it.
func TestPlainCredentialRefusal(t *testing.T) {
	at := Target{Name: "api.example.com", Port: 80}
	want := `request to api.example.com:80 refused: credential "gh" is for it, and is sent over TLS only`
	if got := PlainCredentialRefusal(at, "gh", false); got != want {
		t.Errorf("in the clear: %q, want %q", got, want)
	}
	if got := PlainCredentialRefusal(at, "gh", true); got != "" {
		t.Errorf("over TLS: %q", got)
	}
	if got := PlainCredentialRefusal(at, "", false); got != "" {
		t.Errorf("no credential: %q", got)
	}
}

func TestCredentialScope(t *testing.T) {
	g := inspectGate(t, EntryConfig{Inspect: true},
		CredentialConfig{Name: "gh", Host: "api.example.com", Methods: []string{"GET"}, PathPrefixes: []string{"/repos/acme/"}},
		CredentialConfig{Name: "any", Host: "api.example.com:443", Tasks: []string{"other"}})
	at := Target{Name: "api.example.com", Port: 443}
	cases := []struct {
		task   string
		t      Target
		method string
		path   string
		want   string
	}{
		{"t", at, "GET", "/repos/acme/x", "gh"},
		{"t", at, "POST", "/repos/acme/x", ""},
		{"t", at, "GET", "/repos/other", ""},
		{"t", at, "GET", "/repos/acme/../other", ""},
		{"t", at, "GET", "/repos/acme/x;jsessionid=1", ""},
		{"t", at, "GET", "/repos/acme/x%3B", ""},
		{"t", Target{Name: "api.example.com", Port: 8443}, "GET", "/repos/acme/x", "gh"},
		{"t", Target{Name: "evil.example", Port: 443}, "GET", "/repos/acme/x", ""},
		{"other", at, "DELETE", "/", "any"},
		{"other", Target{Name: "api.example.com", Port: 80}, "DELETE", "/", ""},
	}
	for _, c := range cases {
		if got := g.Credential(c.task, c.t, &Request{Method: c.method, Path: c.path}); got != c.want {
			t.Errorf("%s %v %s %s: %q, want %q", c.task, c.t, c.method, c.path, got, c.want)
		}
	}
	for _, c := range []struct {
		task string
		t    Target
		want string
	}{
		{"t", at, "gh"},
		{"other", at, "gh any"},
		{"other", Target{Name: "api.example.com", Port: 80}, "gh"},
		{"t", Target{Name: "evil.example", Port: 443}, ""},
	} {
		if got := strings.Join(g.Credentials(c.task, c.t), " "); got != c.want {
			t.Errorf("Credentials(%s, %v): %q, want %q", c.task, c.t, got, c.want)
		}
	}
	if h := g.CredentialHost("gh"); h != "api.example.com" {
		t.Errorf("CredentialHost: %q", h)
	}
	for _, bad := range []string{"*.example.com", "10.0.0.0/8", ""} {
		if _, err := Compile(Config{Credentials: []CredentialConfig{{Name: "x", Host: bad}}}); err == nil {
			t.Errorf("credential for %q compiled", bad)
		}
	}
}

func FuzzCanonicalPath(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/a/%2e%2E/b", "/a;b/..;c", "//", "/%zz", "/a%2f", "/\x00", "/a%c0%af", "/a%252f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := CanonicalPath(s)
		if err != nil {
			return
		}
		// What is accepted is a plain absolute path of UTF-8 with no
		// segment a server could resolve elsewhere, nothing a server
		// strips (";") or decodes again ("%").
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.ContainsAny(p, "\\\x00;%") || !utf8.ValidString(p) {
			t.Fatalf("%q -> %q", s, p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q -> %q keeps a dot segment", s, p)
			}
		}
	})
}

// FuzzCheckRequest decides arbitrary requests under rules and checks the
// invariants: an allowed request has a canonical path, was allowed by an
// allow rule that matches it, no deny rule matches it in any case or with
// or without a trailing "/", and no header servers read as X-Debug
// reaches it.
func FuzzCheckRequest(f *testing.F) {
	g, err := Compile(Config{TaskAllowlist: map[string][]string{"t": {"a.example"}},
		Entries: map[string]map[string]EntryConfig{"t": {"a.example": repoRules}}})
	if err != nil {
		f.Fatal(err)
	}
	e := g.Entry("t", "a.example")
	f.Add("GET", "/repos/acme/x", "", "", "X-Other", "1")
	f.Add("POST", "/upload/a", "kind=diff", "", "X_Debug", "1")
	f.Add("GET", "/repos/acme/x/%61dmin/y", "", "websocket", "", "")
	f.Add("GET", "/repos/acme/x/ADMIN", "", "", "", "")
	f.Fuzz(func(t *testing.T, method, path, query, upgrade, name, value string) {
		q := &Request{Method: method, Path: path, RawQuery: query, Upgrade: upgrade}
		if name != "" {
			q.Header = map[string][]string{name: {value}}
		}
		d := e.CheckRequest(q)
		if !d.Allowed() {
			return
		}
		p, err := CanonicalPath(path)
		if err != nil {
			t.Fatalf("%s %q allowed with a path that is not canonical: %v", method, path, err)
		}
		if l := strings.ToLower(p) + "/"; strings.Contains(l, "/admin/") {
			t.Fatalf("%s %q allowed past the deny rule (%s)", method, path, d.Reason)
		}
		if FoldHeaderName(name) == "x-debug" {
			t.Fatalf("%s %q with %q allowed past the deny rule on X-Debug", method, path, name)
		}
		if d.Rule == "" || d.Rule == "no-admin" || d.Rule == "no-debug" {
			t.Fatalf("%s %q allowed by %q", method, path, d.Rule)
		}
	})
}
