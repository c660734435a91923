package egress

import (
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// formRules allow every request but what the deny rules name.
var formRules = EntryConfig{Inspect: true, Rules: []RuleConfig{
	{Name: "all"},
	{Name: "no-admin", Deny: true, PathPrefixes: []string{"/api/admin/"}},
	{Name: "no-secrets", Deny: true, Paths: []string{"/**/secrets"}},
	{Name: "no-delete", Deny: true, Methods: []string{"DELETE"}},
	{Name: "no-debug", Deny: true, Headers: map[string][]string{"X-Debug": {"1"}}},
}}

// TestRequestForms: a request whose routing differs between common
// servers is refused, or decided as the most permissive of them routes
// it, so that no deny rule is passed by a spelling some server reads as
// what it denies. Each case was allowed before.
func TestRequestForms(t *testing.T) {
	e := inspectGate(t, formRules).Entry("t", "api.example.com:443")
	h := func(kv ...string) map[string][]string {
		m := map[string][]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = append(m[kv[i]], kv[i+1])
		}
		return m
	}
	cases := []struct {
		method, path, query string
		header              map[string][]string
		rule, reason        string
	}{
		// Tomcat, Jetty and Spring drop ";parameters" from each segment.
		{method: "GET", path: "/api/admin;/y", reason: `has a ";"`},
		{method: "GET", path: "/api/admin;jsessionid=1/y", reason: `has a ";"`},
		{method: "GET", path: "/api/admin%3b/y", reason: `escaped "/", "\", ";"`},
		// Decoded twice by some servers.
		{method: "GET", path: "/api/admin%252fy", reason: `escaped "/", "\", ";", "%"`},
		{method: "GET", path: "/api%5cadmin/y", reason: `escaped "/", "\"`},
		// An overlong "/" (C0 AF) is "/" to lax UTF-8 decoders.
		{method: "GET", path: "/api/admin%c0%afy", reason: "not UTF-8"},
		// Express, ASP.NET and IIS route without case, and a path with or
		// without its trailing "/" alike.
		{method: "GET", path: "/API/Admin/y", rule: "no-admin", reason: "deny rules win"},
		{method: "GET", path: "/api/admin", rule: "no-admin", reason: "deny rules win"},
		{method: "GET", path: "/x/secrets/", rule: "no-secrets", reason: "deny rules win"},
		{method: "GET", path: "/x/%53ECRETS", rule: "no-secrets", reason: "deny rules win"},
		// Werkzeug and Express read the method without case.
		{method: "delete", path: "/x", reason: "not in upper case"},
		{method: "Delete", path: "/x", reason: "not in upper case"},
		// Method and path overrides.
		{method: "POST", path: "/x", header: h("X-Http-Method-Override", "DELETE"), reason: "another method or path"},
		{method: "POST", path: "/x", header: h("X_http_method", "DELETE"), reason: "another method or path"},
		{method: "GET", path: "/x", header: h("X-Original-Url", "/api/admin/y"), reason: "another method or path"},
		{method: "POST", path: "/x", query: "_method=DELETE", reason: `"_method"`},
		// CGI and WSGI read "_" as "-": X_Debug is X-Debug to them.
		{method: "GET", path: "/x", header: h("X_debug", "1"), rule: "no-debug", reason: "deny rules win"},
		{method: "GET", path: "/x", header: h("X-Debug", "0", "X_debug", "1"), reason: "which servers read as one"},
		{method: "GET", path: "/x", header: h("x-debug", "0", "X-Debug", "0"), reason: "which servers read as one"},
		// A list: "0, 1" holds 1.
		{method: "GET", path: "/x", header: h("X-Debug", "0, 1"), rule: "no-debug", reason: "deny rules win"},
		// Targets that are not a path.
		{method: "OPTIONS", path: "*", reason: "does not start with /"},
		{method: "GET", path: "admin/y", reason: "does not start with /"},
	}
	for _, c := range cases {
		q := &Request{Host: "api.example.com:443", Method: c.method, Path: c.path, RawQuery: c.query, Header: c.header}
		d := e.CheckRequest(q)
		if d.Allowed() || d.Rule != c.rule || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s %s?%s %v: %v rule %q: %s", c.method, c.path, c.query, c.header, d.Verdict, d.Rule, d.Reason)
		}
	}
	for _, q := range []*Request{
		{Method: "GET", Path: "/api/administer"},
		{Method: "GET", Path: "/api/adm%69n-page/"},
		{Method: "GET", Path: "/x/secrets-list"},
		{Method: "PROPFIND", Path: "/a%20b/%C3%A9"},
		{Method: "GET", Path: "/x", Header: h("X-Debug", "0", "X-Other", "1")},
		{Method: "GET", Path: "/x", RawQuery: "method=DELETE"},
	} {
		if d := e.CheckRequest(q); !d.Allowed() {
			t.Errorf("%s %s %v refused: %s", q.Method, q.Path, q.Header, d.Reason)
		}
	}
	// An entry without rules decides nothing on the form.
	none := inspectGate(t, EntryConfig{Inspect: true}).Entry("t", "api.example.com:443")
	if d := none.CheckRequest(&Request{Method: "get", Path: "/@scope%2fname"}); !d.Allowed() {
		t.Errorf("no rules: %s", d.Reason)
	}
}

// TestRuleHeaderNames: a rule cannot name a header the proxy does not
// forward as sent, nor two that servers read as one.
func TestRuleHeaderNames(t *testing.T) {
	for name, want := range map[string]string{
		"Connection": "not forwarded", "x_forwarded_for": "not forwarded", "HOST": "not forwarded", "Te": "not forwarded",
		"a b": "not an HTTP token",
	} {
		_, err := Compile(Config{TaskAllowlist: map[string][]string{"t": {"a.example"}},
			Entries: map[string]map[string]EntryConfig{"t": {"a.example": {Inspect: true, Rules: []RuleConfig{
				{Name: "r", Headers: map[string][]string{name: {"*"}}}}}}}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", name, err, want)
		}
	}
	_, err := Compile(Config{TaskAllowlist: map[string][]string{"t": {"a.example"}},
		Entries: map[string]map[string]EntryConfig{"t": {"a.example": {Inspect: true, Rules: []RuleConfig{
			{Name: "r", Headers: map[string][]string{"X-Tenant": {"a"}, "x_tenant": {"b"}}}}}}}})
	if err == nil || !strings.Contains(err.Error(), `headers "X-Tenant" and "x_tenant" are one header`) {
		t.Errorf("two spellings of one header: %v", err)
	}
}

// TestForwardHeader: what ForwardHeader leaves is what
// httputil.ReverseProxy, the proxy's forwarder, sends a real server,
// and the upgrade it reports is the one forwarded.
func TestForwardHeader(t *testing.T) {
	got := make(chan http.Header, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	defer up.Close()
	target, _ := url.Parse(up.URL)
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, ErrorLog: log.New(io.Discard, "", 0)}
	// Headers the transport sets or leaves out of its own accord.
	own := []string{"User-Agent", "Accept-Encoding", "Content-Length"}
	cases := []struct {
		header  http.Header
		upgrade string
	}{
		{http.Header{"Connection": {"X-Tenant"}, "X-Tenant": {"acme"}, "X-Other": {"1"}}, ""},
		{http.Header{"Connection": {"keep-alive, x-tenant", "X_Debug"}, "X-Tenant": {"acme"}, "X_debug": {"1"}, "X-Debug": {"2"}}, ""},
		{http.Header{"Connection": {"Upgrade, X-A"}, "Upgrade": {"WebSocket"}, "X-A": {"1"}, "Sec-Websocket-Key": {"k"}}, "websocket"},
		{http.Header{"Connection": {"upgrade"}}, "(none named)"},
		{http.Header{"Upgrade": {"websocket"}, "X-B": {"1"}}, ""},
		{http.Header{"Te": {"trailers, deflate"}, "Trailer": {"X-T"}, "Keep-Alive": {"300"}, "Proxy-Authorization": {"Basic eA=="},
			"Proxy-Connection": {"keep-alive"}, "Forwarded": {"for=1.2.3.4"}, "X-Forwarded-For": {"1.2.3.4"}, "X-Forwarded-Host": {"h"},
			"X-Forwarded-Proto": {"http"}, "X-Forwarded-Prefix": {"/p"}}, ""},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header = c.header.Clone()
		want := c.header.Clone()
		if up := ForwardHeader(want); up != c.upgrade {
			t.Errorf("%v: upgrade %q, want %q", c.header, up, c.upgrade)
		}
		rp.ServeHTTP(httptest.NewRecorder(), r)
		have := <-got
		for _, k := range own {
			have.Del(k)
			want.Del(k)
		}
		if !maps.EqualFunc(have, want, slices.Equal) {
			t.Errorf("%v:\nforwarded     %v\nForwardHeader %v", c.header, have, want)
		}
	}
}
