package policy_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// inspectPolicy is a policy with every egress v2 field: an inspected
// entry with rules, a credential for it, budgets per task and session.
const inspectPolicy = `{
  "toolScopes": {},
  "egress": {
    "taskAllowlist": {
      "gh": [
        "pypi.org",
        {"host": "api.github.com:443", "inspect": true, "upstreamCa": "/etc/airlock/ca.pem",
         "rules": [
           {"name": "read", "methods": ["GET", "HEAD"], "paths": ["/repos/acme/**"]},
           {"name": "no-admin", "action": "deny", "pathPrefixes": ["/admin/"], "query": {"x": ["*"]}, "headers": {"X-Debug": ["1"]}},
           {"name": "live", "methods": ["GET"], "paths": ["/socket"], "websocket": true}
         ]},
        {"host": "10.0.0.7:5432", "protocol": "raw"}
      ]
    },
    "credentials": [
      {"name": "github", "host": "api.github.com", "scheme": "basic", "username": "x-access-token", "fromEnv": "GITHUB_TOKEN",
       "methods": ["GET"], "pathPrefixes": ["/repos/acme/"], "sandboxEnv": "GITHUB_TOKEN"}
    ],
    "budgets": {"gh": {"bytesOut": 1000, "requests": 10, "hosts": {"api.github.com": {"bytesIn": 5000}}}}
  },
  "session": {"egress": {"bytesOut": 100000, "concurrentConnections": 4}}
}`

func TestInspectPolicyLoads(t *testing.T) {
	l, err := policy.Parse("p.json", []byte(inspectPolicy))
	if err != nil {
		t.Fatal(err)
	}
	cfg := l.EgressConfig()
	if got := cfg.TaskAllowlist["gh"]; strings.Join(got, " ") != "pypi.org api.github.com:443 10.0.0.7:5432" {
		t.Errorf("allowlist %q", got)
	}
	e := cfg.Entries["gh"]["api.github.com:443"]
	if !e.Inspect || len(e.Rules) != 3 || !e.Rules[1].Deny || e.UpstreamCA != "/etc/airlock/ca.pem" {
		t.Errorf("entry %+v", e)
	}
	if _, ok := cfg.Entries["gh"]["pypi.org"]; ok {
		t.Error("a string entry got options")
	}
	if len(cfg.Credentials) != 1 || cfg.Credentials[0].Host != "api.github.com" {
		t.Errorf("credentials %+v", cfg.Credentials)
	}
	// The YAML form is the same policy, the string shorthand included.
	y := "toolScopes: {}\negress:\n  taskAllowlist:\n    gh:\n      - pypi.org\n      - host: api.github.com:443\n        inspect: true\n"
	ly, err := policy.Parse("p.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if ly.EgressConfig().TaskAllowlist["gh"][0] != "pypi.org" || !ly.EgressConfig().Entries["gh"]["api.github.com:443"].Inspect {
		t.Errorf("yaml: %+v", ly.EgressConfig())
	}
}

// TestInspectErrors: every mistake is an error at the field's line and
// column, with a hint.
func TestInspectErrors(t *testing.T) {
	wrap := func(allow, rest string) string {
		return "{\"toolScopes\": {},\n\"egress\": {\"taskAllowlist\": {\"t\": [\n" + allow + "\n]}" + rest + "}}"
	}
	for _, c := range []struct{ src, want string }{
		{wrap(`{"host": "a.example", "rules": [{"name": "r"}]}`, ""),
			`p.json:3:32: egress.taskAllowlist.t[0].rules: rules on "a.example", which is not inspected` + "\n\thint: add \"inspect\": true"},
		{wrap(`{"host": "a.example", "inspect": true, "rules": [{"name": "r", "methods": ["GET", "FETCH"]}]}`, ""),
			`p.json:3:83: egress.taskAllowlist.t[0].rules[0].methods[1]: unknown method "FETCH"` + "\n\thint: known methods (upper case): GET, HEAD,"},
		{wrap(`{"host": "a.example", "inspect": true, "rules": [{"name": "r", "paths": ["repos/*"]}]}`, ""),
			`p.json:3:74: egress.taskAllowlist.t[0].rules[0].paths[0]: path "repos/*" does not start with /`},
		{wrap(`{"host": "a.example", "inspect": true, "rules": [{"name": "r"}, {"name": "r"}]}`, ""),
			`p.json:3:74: egress.taskAllowlist.t[0].rules[1].name: duplicate rule name "r"`},
		{wrap(`{"host": "a.example", "inspect": true, "rules": [{"name": "r", "headers": {"Connection": ["x"]}}]}`, ""),
			`p.json:3:90: egress.taskAllowlist.t[0].rules[0].headers.Connection: header "Connection" is not forwarded as the client sent it`},
		{wrap(`{"host": "a.example", "inspect": true, "protocol": "raw"}`, ""),
			`p.json:3:52: egress.taskAllowlist.t[0].protocol: an inspected host carries HTTP or HTTPS`},
		{wrap(`{"host": "a.example", "upstreamCa": "/ca.pem"}`, ""),
			`p.json:3:37: egress.taskAllowlist.t[0].upstreamCa: upstreamCa on "a.example", which is not inspected`},
		{wrap(`{"host": "169.254.169.254", "inspect": true}`, ""),
			`p.json:3:10: egress.taskAllowlist.t[0].host: "169.254.169.254" is always blocked`},
		{wrap(`"a.example", {"host": "a.example", "inspect": true}`, ""),
			`p.json:3:14: egress.taskAllowlist.t[1]: "a.example" is listed twice`},
		{wrap(`"a.example"`, `, "credentials": [{"name": "c", "host": "b.example", "scheme": "bearer", "fromEnv": "TOKEN"}]`),
			`p.json:4:43: egress.credentials[0].host: credential "c" is for "b.example", which no task's entry allows with inspection`},
		{wrap(`"a.example"`, `, "credentials": [{"name": "c", "host": "a.example", "tasks": ["t"], "scheme": "bearer", "fromEnv": "TOKEN"}]`),
			`p.json:4:43: egress.credentials[0].host: task "t" allows "a.example" only through "a.example", which is not inspected`},
		{wrap(`{"host": "a.example", "inspect": true}`, `, "credentials": [{"name": "c", "host": "a.example", "scheme": "bearer", "fromEnv": "TOKEN", "fromFile": "/t"}]`),
			`p.json:4:21: egress.credentials[0]: credential "c" needs exactly one of fromEnv and fromFile`},
		{wrap(`{"host": "a.example", "inspect": true}`, `, "credentials": [{"name": "c", "host": "*.example", "scheme": "bearer", "fromEnv": "TOKEN"}]`),
			`p.json:4:43: egress.credentials[0].host: host "*.example": a credential is for one host`},
		{wrap(`{"host": "a.example", "inspect": true}`, `, "credentials": [{"name": "c", "host": "a.example", "scheme": "basic", "fromFile": "tok"}]`),
			`p.json:4:21: egress.credentials[0]: basic authentication needs a username`},
		{wrap(`{"host": "a.example", "inspect": true}`, `, "credentials": [{"name": "c", "host": "a.example", "scheme": "bearer", "fromEnv": "T", "sandboxEnv": "HTTPS_PROXY"}]`),
			`p.json:4:106: egress.credentials[0].sandboxEnv: "HTTPS_PROXY" is not a variable name a credential may set`},
		{wrap(`{"host": "a.example", "inspect": true}`, `, "credentials": [{"name": "c", "host": "a.example", "scheme": "header", "header": "Host", "fromEnv": "T"}]`),
			`p.json:4:86: egress.credentials[0].header: header "Host" is not a header a credential may set`},
		{wrap(`"a.example"`, `, "budgets": {"u": {"bytesOut": 1}}`),
			`p.json:4:22: egress.budgets.u: a budget for task "u", which has no allowlist`},
		{wrap(`"a.example"`, `, "budgets": {"t": {"hosts": {"b.example": {"requests": 1}}}}`),
			`p.json:4:46: egress.budgets.t.hosts["b.example"]: a budget for "b.example", which no entry of task "t" allows`},
		{wrap(`"a.example"`, `, "budgets": {"t": {"bytesIn": -1}}`),
			`p.json:4:34: egress.budgets.t.bytesIn: bytesIn must be positive, got -1`},
	} {
		_, err := policy.Parse("p.json", []byte(c.src))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\n got  %v\n want %s", c.src, err, c.want)
		}
	}
}
