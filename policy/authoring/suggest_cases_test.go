package authoring

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

const suggestPolicy = `{
  "toolScopes": {"t": {
    "allow": [{"name": "git", "command": "git", "argPatterns": [["status"]]}],
    "escalate": [{"name": "rm", "command": "rm", "allowExtraArgs": true}],
    "deny": [{"name": "no-push", "command": "git", "argPatterns": [["push"]], "allowExtraArgs": true}]
  }},
  "egress": {
    "taskAllowlist": {"t": ["pypi.org",
      {"host": "api.github.com", "inspect": true, "rules": [
        {"name": "read", "methods": ["GET"], "paths": ["/repos/**"]},
        {"name": "no-delete", "action": "deny", "methods": ["DELETE"]}]},
      {"host": "open.example", "inspect": true}]},
    "alwaysBlocked": ["blocked.example"],
    "credentials": [{"name": "gh", "host": "api.github.com", "scheme": "bearer", "fromEnv": "GH_TOKEN", "methods": ["GET", "POST"]}],
    "budgets": {"t": {"requests": 10, "hosts": {"pypi.org": {"bytesIn": 1000}}}}
  },
  "session": {"egress": {"connections": 5}}
}`

// ev is an event as read from the log, with a seq.
func ev(seq uint64, kind audit.Kind, d string, c audit.Context) audit.Event {
	return audit.Event{Seq: seq, Kind: kind, Decision: d, Reason: "why", Context: c}
}

func cmdDeny(seq uint64, tool string, argv ...string) audit.Event {
	return ev(seq, audit.KindCommand, audit.DecisionDeny, audit.Context{Tool: tool, Command: argv[0], Args: argv[1:]})
}

func hostDeny(seq uint64, task, host string, port uint16, addrs ...string) audit.Event {
	return ev(seq, audit.KindEgress, audit.DecisionDeny, audit.Context{Task: task, Host: host, Port: port, Protocol: "connect", Addresses: addrs})
}

func requestDeny(seq uint64, entry, method, path string) audit.Event {
	host, _, _ := strings.Cut(entry, ":")
	return ev(seq, audit.KindEgress, audit.DecisionDeny, audit.Context{Task: "t", Host: host, Port: 443, Protocol: "inspected",
		Details: map[string]string{"method": method, "path": path, "entry": entry}})
}

func kill(seq uint64, tool, by string, c audit.Context) audit.Event {
	c.Tool, c.KilledBy = tool, by
	return ev(seq, audit.KindResource, audit.DecisionKill, c)
}

func budgetReached(seq uint64, budget, capName, host string) audit.Event {
	return ev(seq, audit.KindEgress, audit.DecisionDeny, audit.Context{Task: "t", Host: host, Event: audit.EventEgressBudgetReached,
		Details: map[string]string{"budget": budget, "cap": capName}})
}

// TestSuggestLeavesOut checks that each refusal nothing may be proposed
// for is left out, with why, and that nothing is proposed for it.
func TestSuggestLeavesOut(t *testing.T) {
	p := parse(t, "p.json", suggestPolicy)
	escalated := ev(0, audit.KindCommand, audit.DecisionEscalate, audit.Context{Tool: "t", Command: "rm", Args: []string{"x"}, Rule: "rm"})
	truncated := cmdDeny(0, "t", "make", "x")
	truncated.Context.Truncated = true
	budgeted := hostDeny(0, "t", "files.example", 443)
	budgeted.Context.Details = map[string]string{"budget": "task t"}
	socks4 := hostDeny(0, "t", "files.example", 443)
	socks4.Context.Protocol = "socks4"
	for _, c := range []struct {
		ev  audit.Event
		why string
	}{
		{cmdDeny(0, "t", "git", "push", "--force"), `denied by deny rule "no-push"`},
		{escalated, `escalated by rule "rm"`},
		{cmdDeny(0, "t", "git", "status"), `the policy allows it now (rule "git")`},
		{cmdDeny(0, "t", "echo", "a\nb"), "control or invisible characters"},
		{cmdDeny(0, "t", "echo", "\u202egnp.exe"), "control or invisible characters"},
		{cmdDeny(0, "t", "echo", "\xff"), "bytes that are not UTF-8"},
		{cmdDeny(0, "t", "echo", "a\u2028b"), "control or invisible characters"},
		{cmdDeny(0, "t", "ec\x00ho"), "control or invisible characters"},
		{cmdDeny(0, "a b", "ls"), "the tool's name"},
		{truncated, "shortened the command line"},
		{cmdDeny(0, "t", "./build.sh"), "relative or unclean path"},
		{cmdDeny(0, "t", "/usr/bin/../bin/ls"), "relative or unclean path"},
		{cmdDeny(0, "t", "my prog"), "white space"},
		{hostDeny(0, "t", "169.254.169.254", 80), "the built-in floor blocks it"},
		{hostDeny(0, "t", "metadata.google.internal", 80), "the built-in floor blocks it"},
		{hostDeny(0, "t", "0251.0376.0251.0376", 80), "the built-in floor blocks it"},
		{hostDeny(0, "t", "[fd00:ec2::254]", 80), "the built-in floor blocks it"},
		{hostDeny(0, "t", "sneaky.example", 80, "169.254.169.254"), "the name resolved to 169.254.169.254"},
		{hostDeny(0, "t", "blocked.example", 443), `alwaysBlocked entry "blocked.example"`},
		{hostDeny(0, "t", "sub.blocked.example", 443), `alwaysBlocked entry "blocked.example"`},
		{hostDeny(0, "t", "pypi.org", 443), "the gate allows it now"},
		{hostDeny(0, policy.NoTask, "pypi.org", 443), "the session had no task"},
		{hostDeny(0, "a b", "pypi.org", 443), "the task's name"},
		{hostDeny(0, "t", "", 443), "names no destination"},
		{hostDeny(0, "t", "*.evil.example", 443), "not a destination the gate can allow"},
		{budgeted, `refused by budget "task t"`},
		{socks4, "before any egress decision"},
		{requestDeny(0, "api.github.com", "DELETE", "/repos/acme/x"), `refused by rule "no-delete"`},
		{requestDeny(0, "api.github.com", "GET", "/orgs/*"), `its path holds "*"`},
		{requestDeny(0, "api.github.com", "GET", "/a/%2F/b"), "no rule can name its path"},
		{requestDeny(0, "api.github.com", "GET", "/a/../b"), "no rule can name its path"},
		{requestDeny(0, "api.github.com", "GET", "/"+strings.Repeat("a", 300)), "may have shortened the path"},
		{requestDeny(0, "api.github.com", "CONNECT", "/x"), "no rule can name it"},
		{requestDeny(0, "open.example", "GET", "/ws"), "has no rules, so it allows every request"},
		{requestDeny(0, "pypi.org", "GET", "/simple/"), `entry "pypi.org" is not inspected now`},
		{requestDeny(0, "files.pythonhosted.org", "GET", "/x"), "the gate refuses its destination now"},
		{requestDeny(0, "api.github.com:443", "GET", "/orgs"), `now allowed through entry "api.github.com", not "api.github.com:443"`},
		{requestDeny(0, "api.github.com", "GET", "/repos/acme/x"), "the policy allows it now"},
		{kill(0, "t", "weird", audit.Context{}), "airlock knows no such cap"},
		{kill(0, "nobody", "memory", audit.Context{}), "no scope for the tool now"},
		{kill(0, "t", "memory", audit.Context{PeakMemoryBytes: 100 << 20}), "above the 100.0 MiB of memory the run reached"},
		{budgetReached(0, "task other", "requests", ""), "no such budget now"},
		{budgetReached(0, "task t", "bytesOut", ""), "no such cap now"},
		{budgetReached(0, "task t", "requests", "nowhere.example"), "no such cap now"},
	} {
		c.ev.Seq = 7
		got, err := Suggest(p, []audit.Event{c.ev}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Suggestions) > 0 || got.Policy != nil || len(got.LeftOut) != 1 ||
			!strings.Contains(got.LeftOut[0].Why, c.why) || !slices.Equal(got.LeftOut[0].Records, Records{{Seq: 7}}) {
			t.Errorf("%+v:\nsuggestions %+v\nleft out %+v\nwant left out: %s", c.ev.Context, got.Suggestions, got.LeftOut, c.why)
		}
		if s := got.LeftOut[0].Subject; !utf8.ValidString(s) || strings.ContainsAny(s, "\n\u202e\x00\u2028") {
			t.Errorf("subject not escaped: %q", got.LeftOut[0].Subject)
		}
	}
}

// allowed decides argv for tool under l.
func allowed(t *testing.T, l *policy.Loaded, tool string, argv ...string) bool {
	t.Helper()
	d, err := newDecider(l.Policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d.command(tool, argv).Allowed()
}

func TestSuggestCommandLines(t *testing.T) {
	p := parse(t, "p.json", `{"toolScopes": {}}`)
	recs := []audit.Event{
		cmdDeny(2, "ci", "go", "test", "./a"), cmdDeny(3, "ci", "go", "test", "./b"), cmdDeny(4, "ci", "go", "test", "./c", "-v"),
		cmdDeny(5, "ci", "go", "vet", "./..."), cmdDeny(6, "ci", "go", "test", "./a"),
		cmdDeny(7, "ci", "sh", "-c", "make a"), cmdDeny(8, "ci", "sh", "-c", "make b"), cmdDeny(9, "ci", "sh", "-c", "make c"),
		cmdDeny(10, "ci", "true"), cmdDeny(11, "ci", "/workspace/build.sh", "--fast"),
		cmdDeny(12, "ci", "rm", "-rf", "*"), cmdDeny(13, "ci", "echo", ""),
	}
	got, err := Suggest(p, recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := parse(t, "p.json", string(got.Policy))
	for _, argv := range [][]string{{"go", "test", "./a"}, {"go", "test", "./zzz"}, {"go", "test"}, {"go", "vet", "./..."},
		{"sh", "-c", "make b"}, {"true"}, {"/workspace/build.sh", "--fast"}, {"rm", "-rf", "*"}, {"echo", ""}} {
		if !allowed(t, l, "ci", argv...) {
			t.Errorf("%q is not allowed", argv)
		}
	}
	for _, argv := range [][]string{{"go", "vet", "./...", "-x"}, {"go", "build"}, {"go"}, {"sh", "-c", "make d"}, {"sh", "-c"},
		{"true", "x"}, {"/workspace/build.sh"}, {"rm", "-rf", "a"}, {"rm", "-rf", "*", "x"}, {"echo"}, {"echo", "", ""}} {
		if allowed(t, l, "ci", argv...) {
			t.Errorf("%q is allowed", argv)
		}
	}
	risks := map[string][]string{}
	for _, s := range got.Suggestions {
		risks[s.Summary] = s.Risks
	}
	for summary, want := range map[string]string{
		`tool "ci": allow go test ...`:                                      "wider than each refusal: any arguments after go test (3 refused command lines start so)",
		`tool "ci": allow sh -c 'make a' | sh -c 'make b' | sh -c 'make c'`: "a shell with -c",
		`tool "ci": allow /workspace/build.sh --fast`:                       "a program under a tree the sandbox writes",
	} {
		if !slices.ContainsFunc(risks[summary], func(r string) bool { return strings.Contains(r, want) }) {
			t.Errorf("%s: risks %q, want %q (all: %v)", summary, risks[summary], want, risks)
		}
	}
	if got.Suggestions[0].Records.String() != "2, 3, 4, 6" {
		t.Errorf("records of the prefix: %v", got.Suggestions[0].Records)
	}

	exact, err := Suggest(p, recs, Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	l = parse(t, "p.json", string(exact.Policy))
	if allowed(t, l, "ci", "go", "test", "./zzz") || !allowed(t, l, "ci", "go", "test", "./c", "-v") {
		t.Error("--exact proposed a prefix")
	}
}

func TestSuggestHosts(t *testing.T) {
	p := parse(t, "p.yaml", "toolScopes: {}\negress:\n  taskAllowlist:\n    t: [pypi.org]\n")
	recs := []audit.Event{
		hostDeny(2, "t", "a.cdn.example.com", 443), hostDeny(3, "t", "b.cdn.example.com", 443), hostDeny(4, "t", "c.cdn.example.com", 443),
		hostDeny(5, "t", "a.cdn.example.com", 443),
		hostDeny(6, "t", "x.two.example", 443), hostDeny(7, "t", "y.two.example", 443), // two siblings: exact
		hostDeny(8, "t", "a.github.io", 443), hostDeny(9, "t", "b.github.io", 443), hostDeny(10, "t", "c.github.io", 443), // a public suffix
		hostDeny(11, "t", "p.int.example", 443, "10.0.0.5"), hostDeny(12, "t", "q.int.example", 443, "10.0.0.6"), hostDeny(13, "t", "r.int.example", 443),
		hostDeny(14, "t", "10.1.2.3", 5432), hostDeny(15, "t", "127.0.0.1", 8080), hostDeny(16, "t", "2001:db8::1", 443),
		hostDeny(17, "t", "EXAMPLE.org.", 80),
	}
	got, err := Suggest(p, recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := parse(t, "p.yaml", string(got.Policy))
	var hosts []string
	for _, e := range l.Egress.TaskAllowlist["t"] {
		hosts = append(hosts, e.Host)
	}
	want := []string{"pypi.org", "*.cdn.example.com:443", "x.two.example:443", "y.two.example:443", "a.github.io:443", "b.github.io:443",
		"c.github.io:443", "p.int.example:443", "q.int.example:443", "r.int.example:443", "10.1.2.3:5432", "127.0.0.1:8080", "[2001:db8::1]:443",
		"example.org:80"}
	if !slices.Equal(hosts, want) {
		t.Errorf("entries:\n%q\nwant\n%q", hosts, want)
	}
	kinds := map[string]string{}
	risks := map[string]string{}
	for _, s := range got.Suggestions {
		kinds[s.Entry.Host] = s.Kind
		risks[s.Entry.Host] = strings.Join(s.Risks, "; ")
	}
	if kinds["*.cdn.example.com:443"] != "wildcard" || !strings.Contains(risks["*.cdn.example.com:443"], "from 3 refused siblings") {
		t.Errorf("the wildcard: %s, %s", kinds["*.cdn.example.com:443"], risks["*.cdn.example.com:443"])
	}
	for host, want := range map[string]string{
		"p.int.example:443": "the name resolved to 10.0.0.5 is not public: private (RFC 1918)",
		"10.1.2.3:5432":     "the address 10.1.2.3 is not public: private (RFC 1918)",
		"127.0.0.1:8080":    "the address 127.0.0.1 is not public: loopback",
		"[2001:db8::1]:443": "documentation",
	} {
		if !strings.Contains(risks[host], want) {
			t.Errorf("%s: risks %q, want %q", host, risks[host], want)
		}
	}
	if !bytes.Contains(got.Policy, []byte("# suggested by airlock policy suggest from audit records 2, 3, 4, 5\n")) {
		t.Errorf("no comment naming the records:\n%s", got.Policy)
	}
}

func TestSuggestRequests(t *testing.T) {
	p := parse(t, "p.json", suggestPolicy)
	got, err := Suggest(p, []audit.Event{
		requestDeny(2, "api.github.com", "GET", "/orgs/acme?page=2"),
		requestDeny(3, "api.github.com", "POST", "/repos/acme/x/issues"),
		requestDeny(4, "api.github.com", "GET", "/orgs/acme%20corp"),
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Suggestions) != 2 {
		t.Fatalf("suggestions %+v, left out %+v", got.Suggestions, got.LeftOut)
	}
	if r := got.Suggestions[0].Request; r.Name != "suggested-get" || !slices.Equal(r.Paths, []string{"/orgs/acme", "/orgs/acme corp"}) {
		t.Errorf("rule %+v", r)
	}
	post := got.Suggestions[1]
	if !slices.ContainsFunc(post.Risks, func(r string) bool { return strings.Contains(r, `credential "gh"`) }) ||
		!slices.ContainsFunc(post.Risks, func(r string) bool { return strings.Contains(r, "changes what the server holds") }) {
		t.Errorf("POST risks: %q", post.Risks)
	}
	l := parse(t, "p.json", string(got.Policy))
	d, err := newDecider(l.Policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"GET https://api.github.com/orgs/acme?page=2":       true,
		"GET https://api.github.com/orgs/acme%20corp":       true,
		"POST https://api.github.com/repos/acme/x/issues":   true,
		"GET https://api.github.com/orgs/acme/x":            false,
		"POST https://api.github.com/orgs/acme":             false,
		"PUT https://api.github.com/repos/acme/x/issues":    false,
		"DELETE https://api.github.com/repos/acme/x/issues": false,
	} {
		x, err := policy.ParseEntryExample(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, req := d.request("t", x); req.Allowed() != want {
			t.Errorf("%s: %v", s, req)
		}
	}
	if e := l.Egress.TaskAllowlist["t"][1]; !slices.Contains(e.Examples.Match, "GET https://api.github.com/orgs/acme?page=2") {
		t.Errorf("examples %+v", e.Examples)
	}
}

func TestSuggestLimits(t *testing.T) {
	p := parse(t, "p.json", suggestPolicy)
	got, err := Suggest(p, []audit.Event{
		kill(2, "t", "memory", audit.Context{PeakMemoryBytes: 512 << 20}),
		kill(3, "t", "memory", audit.Context{PeakMemoryBytes: 530 << 20}),
		kill(4, "t", "pids", audit.Context{}),
		kill(5, "t", killedBySession, audit.Context{}),
		budgetReached(6, "task t", "requests", ""),
		budgetReached(7, "task t", "bytesIn", "pypi.org"),
		budgetReached(8, "session", "connections", ""),
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := parse(t, "p.json", string(got.Policy))
	if c := l.CapsFor("t"); c.MemoryMB != 1024 || c.ProcessCount != 40 {
		t.Errorf("caps %+v", c)
	}
	if s := l.SessionCaps(); s.WallSeconds != 7200 {
		t.Errorf("session %+v", s)
	}
	if b := l.Egress.Budgets["t"]; *b.Requests != 20 || *b.Hosts["pypi.org"].BytesIn != 2000 {
		t.Errorf("budget %+v", b)
	}
	if c := *l.Session.Egress.Connections; c != 10 {
		t.Errorf("session budget %d", c)
	}
	var summaries []string
	for _, s := range got.Suggestions {
		summaries = append(summaries, s.Summary+" / "+strings.Join(s.Risks, "; "))
	}
	all := strings.Join(summaries, "\n")
	for _, want := range []string{
		`tool "t": raise memoryMb from 512 to 1024 (the runs killed by it reached 530.0 MiB of memory) / a cap raised past its default (512): memoryMb`,
		`tool "t": raise processCount from 20 to 40 (the runs killed by it reached what the record does not say)`,
		`the session: raise wallSeconds from 3600 to 7200`,
		`budget "task t": "requests": raise from 10 to 20 (reached)`,
		`budget "task t": "bytesIn" for "pypi.org": raise from 1000 to 2000`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in\n%s", want, all)
		}
	}
}

// TestReadLog checks that only records whose chain verifies are read,
// and only those a suggestion reads.
func TestReadLog(t *testing.T) {
	p := parse(t, "p.json", `{"toolScopes": {}}`)
	recs := writeLog(t, denied(t, p, "t", "ls"),
		audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "x", Context: audit.Context{Event: audit.EventSandboxTornDown}},
		audit.FromDecision(decision.Decision{Gate: decision.GateEgress, Verdict: decision.Allow, Reason: "ok"}, audit.Context{Task: "t", Host: "pypi.org"}))
	if len(recs) != 1 || recs[0].Context.Command != "ls" {
		t.Fatalf("read %+v", recs)
	}

	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"ls"}, {"cat", "x"}} {
		if _, err := l.Append(denied(t, p, "t", argv...)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data, _ := os.ReadFile(path)
	forged := bytes.Replace(data, []byte(`"command":"cat"`), []byte(`"command":"sh "`), 1)
	if _, err := ReadLog(bytes.NewReader(forged), audit.Filter{}); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a changed record was read: %v", err)
	}
	if _, err := ReadLog(bytes.NewReader(data[:len(data)-1]), audit.Filter{}); err == nil {
		t.Error("a torn last line was read")
	}
	if got, err := ReadLog(bytes.NewReader(data), audit.Filter{Tool: "nobody"}); err != nil || len(got) != 0 {
		t.Errorf("the filter: %v %v", got, err)
	}
	all, err := ReadLog(bytes.NewReader(data), audit.Filter{})
	if err != nil || len(all) != 2 {
		t.Fatalf("read %v %v", all, err)
	}
	window := audit.Filter{Since: all[0].TS, Until: all[1].TS}
	if got, err := ReadLog(bytes.NewReader(data), window); err != nil || len(got) != 1 || got[0].Seq != all[0].Seq {
		t.Errorf("the window [%v, %v): %v %v", window.Since, window.Until, got, err)
	}
}
