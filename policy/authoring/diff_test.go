package authoring

import (
	"fmt"
	"slices"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// oldPolicy is the policy each widening in TestDiffKinds is made from.
const oldPolicy = `{
  "toolScopes": {
    "ci": {
      "allow": [
        {"name": "go-test", "command": "go", "argPatterns": [["test", "./..."]]},
        {"name": "git-log", "command": "git", "argPatterns": [["log", "--oneline"]], "allowExtraArgs": true}
      ],
      "escalate": [{"name": "git-push", "command": "git", "argPatterns": [["push"]], "allowExtraArgs": true}],
      "deny": [{"name": "no-all", "command": "git", "argPatterns": [["log", "--oneline", "--all"]], "allowExtraArgs": true}]
    }
  },
  "egress": {
    "taskAllowlist": {"ci": ["proxy.golang.org:443",
      {"host": "api.github.com", "inspect": true, "rules": [{"name": "read", "methods": ["GET"], "paths": ["/repos/acme/**"]}]},
      {"host": "uploads.github.com", "inspect": true, "rules": [{"name": "read", "methods": ["GET"]}]}]},
    "alwaysBlocked": ["evil.example"],
    "credentials": [{"name": "gh", "host": "api.github.com", "scheme": "bearer", "fromEnv": "GH_TOKEN", "methods": ["GET"], "tasks": ["ci"],
      "pathPrefixes": ["/repos/"]}],
    "budgets": {"ci": {"bytesOut": 1000}}
  },
  "require": ["seccomp"],
  "caps": {"memoryMb": 256},
  "session": {"wallSeconds": 600, "egress": {"requests": 10}},
  "filesystem": {"readOnly": ["/usr", "/etc"]},
  "commandSearchPath": ["/usr/bin", "/bin"]
}`

// TestDiffKinds makes one widening of each kind and checks that Diff
// names exactly it, and that the reverse names it as a narrowing.
func TestDiffKinds(t *testing.T) {
	ci := func(p *policy.Policy) *policy.ToolScope {
		ts := p.ToolScopes["ci"]
		p.ToolScopes["ci"] = ts
		return &ts
	}
	allow := func(p *policy.Policy, r policy.CommandPattern) {
		ts := p.ToolScopes["ci"]
		ts.Allow = append(ts.Allow, r)
		p.ToolScopes["ci"] = ts
	}
	entries := func(p *policy.Policy) []policy.AllowEntry { return p.Egress.TaskAllowlist["ci"] }
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name  string
		edit  func(p *policy.Policy)
		kinds []string
	}{
		{"a new tool", func(p *policy.Policy) {
			p.ToolScopes["deploy"] = policy.ToolScope{Allow: []policy.CommandPattern{{Name: "ls", Command: "ls"}}}
		}, []string{KindNewTool, KindNewCommand}},
		{"a new command", func(p *policy.Policy) {
			allow(p, policy.CommandPattern{Name: "make", Command: "make", ArgPatterns: [][]string{{"test"}}})
		}, []string{KindNewCommand}},
		{"a shell rule", func(p *policy.Policy) {
			allow(p, policy.CommandPattern{Name: "sh", Command: "bash", ArgPatterns: [][]string{{"-c", "make test"}}})
		}, []string{KindShellRule}},
		{"a shell rule by a cluster of options", func(p *policy.Policy) {
			allow(p, policy.CommandPattern{Name: "sh", Command: "/bin/sh", ArgPatterns: [][]string{{"-ec", "make test"}}})
		}, []string{KindShellRule}},
		{"a workspace program", func(p *policy.Policy) {
			allow(p, policy.CommandPattern{Name: "build", Command: "/workspace/build.sh"})
		}, []string{KindWorkspaceProgram}},
		{"a glob of workspace programs", func(p *policy.Policy) {
			allow(p, policy.CommandPattern{Name: "venv", Command: "/workspace/.venv/bin/*", AllowExtraArgs: true})
		}, []string{KindWorkspaceProgram}},
		{"a rule with \"shell\": true", func(p *policy.Policy) {
			allow(p, policy.CommandPattern{Name: "sh", Command: "sh", Shell: true})
		}, []string{KindShellRule}},
		{"allowExtraArgs", func(p *policy.Policy) {
			ci(p).Allow[0].AllowExtraArgs = true
			p.ToolScopes["ci"] = *ci(p)
		}, []string{KindWiderSignature}},
		{"a shorter prefix", func(p *policy.Policy) {
			ts := ci(p)
			ts.Allow[1].ArgPatterns = [][]string{{"log"}}
			p.ToolScopes["ci"] = *ts
		}, []string{KindWiderSignature}},
		{"a new signature", func(p *policy.Policy) {
			ts := ci(p)
			ts.Allow[0].ArgPatterns = append(ts.Allow[0].ArgPatterns, []string{"vet", "./..."})
			p.ToolScopes["ci"] = *ts
		}, []string{KindWiderSignature}},
		{"a deny rule dropped", func(p *policy.Policy) {
			ts := ci(p)
			ts.Deny = nil
			p.ToolScopes["ci"] = *ts
		}, []string{KindDenyDropped}},
		{"an escalation dropped", func(p *policy.Policy) {
			ts := ci(p)
			ts.Allow = append(ts.Allow, ts.Escalate[0])
			ts.Escalate = nil
			p.ToolScopes["ci"] = *ts
		}, []string{KindEscalationDropped}},
		{"a new host", func(p *policy.Policy) {
			p.Egress.TaskAllowlist["ci"] = append(entries(p), policy.AllowEntry{Host: "pypi.org:443"})
		}, []string{KindNewHost}},
		{"a new task", func(p *policy.Policy) {
			p.Egress.TaskAllowlist["docs"] = []policy.AllowEntry{{Host: "docs.python.org"}}
		}, []string{KindNewHost}},
		{"a new wildcard", func(p *policy.Policy) {
			p.Egress.TaskAllowlist["ci"] = append(entries(p), policy.AllowEntry{Host: "*.githubusercontent.com"})
		}, []string{KindNewWildcard}},
		{"a private range", func(p *policy.Policy) {
			p.Egress.TaskAllowlist["ci"] = append(entries(p), policy.AllowEntry{Host: "10.0.0.0/8:5432"})
		}, []string{KindPrivateReach}},
		{"loopback", func(p *policy.Policy) {
			p.Egress.TaskAllowlist["ci"] = append(entries(p), policy.AllowEntry{Host: "127.0.0.1:8080"})
		}, []string{KindPrivateReach}},
		{"inspection dropped", func(p *policy.Policy) {
			p.Egress.TaskAllowlist["ci"][2] = policy.AllowEntry{Host: "uploads.github.com"}
		}, []string{KindInspectionDropped}},
		{"a new method", func(p *policy.Policy) {
			p.Egress.TaskAllowlist["ci"][1].Rules[0].Methods = []string{"GET", "POST"}
		}, []string{KindNewMethod}},
		{"a new glob", func(p *policy.Policy) {
			p.Egress.TaskAllowlist["ci"][1].Rules[0].Paths = []string{"/repos/acme/**", "/repos/*/issues"}
		}, []string{KindNewPath}},
		{"a new path", func(p *policy.Policy) {
			p.Egress.TaskAllowlist["ci"][1].Rules[0].Paths = []string{"/repos/acme/**", "/orgs/acme/**"}
		}, []string{KindNewPath}},
		{"a credential for more methods", func(p *policy.Policy) {
			p.Egress.Credentials[0].Methods = nil
		}, []string{KindCredentialWidened}},
		{"a credential for every task", func(p *policy.Policy) {
			p.Egress.Credentials[0].Tasks = nil
		}, []string{KindCredentialWidened}},
		{"a credential for more paths", func(p *policy.Policy) {
			p.Egress.Credentials[0].PathPrefixes = []string{"/repos/", "/orgs/"}
		}, []string{KindCredentialWidened}},
		{"a new credential", func(p *policy.Policy) {
			p.Egress.Credentials = append(p.Egress.Credentials, policy.Credential{Name: "gh2", Host: "api.github.com", Scheme: "bearer", FromEnv: "T"})
		}, []string{KindCredentialWidened}},
		{"a tool's cap raised", func(p *policy.Policy) {
			p.Caps.MemoryMB = i64(512)
		}, []string{KindCapRaised}},
		{"the session's cap raised", func(p *policy.Policy) {
			p.Session.WallSeconds = f64(1200)
		}, []string{KindCapRaised}},
		{"a budget raised", func(p *policy.Policy) {
			p.Egress.Budgets["ci"] = policy.Budget{BytesOut: i64(2000)}
		}, []string{KindBudgetRaised}},
		{"a budget removed", func(p *policy.Policy) {
			p.Session.Egress = nil
		}, []string{KindBudgetRaised}},
		{"a budget's cap removed", func(p *policy.Policy) {
			p.Egress.Budgets["ci"] = policy.Budget{}
		}, []string{KindBudgetRaised}},
		{"require dropped", func(p *policy.Policy) { p.Require = nil }, []string{KindRequireDropped}},
		{"a weaker mode", func(p *policy.Policy) { p.WeakerModes = []string{"egress-unenforced"} }, []string{KindWeakerMode}},
		{"a path shown", func(p *policy.Policy) {
			p.Filesystem.ReadOnly = append(p.Filesystem.ReadOnly, "/opt")
		}, []string{KindFilesystemWidened}},
		{"a path made writable", func(p *policy.Policy) {
			p.Filesystem.ReadWrite = []string{"/usr/share"}
		}, []string{KindFilesystemWidened}},
		{"the search path", func(p *policy.Policy) {
			p.CommandSearchPath = append([]string{"/usr/local/bin"}, p.CommandSearchPath...)
		}, []string{KindSearchPath}},
		{"a block dropped", func(p *policy.Policy) { p.Egress.AlwaysBlocked = nil }, []string{KindBlockDropped}},
		{"a decider", func(p *policy.Policy) {
			p.Approvals = &policy.Approvals{Decider: []string{"/usr/local/bin/decide"}}
		}, []string{KindApprovalDecider}},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := parse(t, "old.json", oldPolicy).Policy
			new := parse(t, "old.json", oldPolicy).Policy
			c.edit(new)
			for _, p := range []*policy.Policy{old, new} {
				if errs := p.Validate(); len(errs) > 0 {
					t.Fatalf("the policy does not load: %v", errs)
				}
			}
			d, err := Diff(old, new)
			if err != nil {
				t.Fatal(err)
			}
			if got := kindsOf(d.Widens); !slices.Equal(got, c.kinds) {
				t.Errorf("widens: kinds %q, want %q: %+v", got, c.kinds, d.Widens)
			}
			if len(d.Narrows) != 0 {
				t.Errorf("narrows: %+v", d.Narrows)
			}
			back, err := Diff(new, old)
			if err != nil {
				t.Fatal(err)
			}
			if got := kindsOf(back.Narrows); !slices.Equal(got, c.kinds) || len(back.Widens) != 0 {
				t.Errorf("reversed: narrows %q, widens %+v; want narrows %q", got, back.Widens, c.kinds)
			}
		})
	}
}

// kindsOf lists the kinds of cs, each once, in order.
func kindsOf(cs []Change) []string {
	var kinds []string
	for _, c := range cs {
		if !slices.Contains(kinds, c.Kind) {
			kinds = append(kinds, c.Kind)
		}
	}
	return kinds
}

func TestDiffSame(t *testing.T) {
	for _, src := range []string{oldPolicy, string(policy.Default().Data)} {
		a, b := parse(t, "a.json", src), parse(t, "b.json", src)
		d, err := Diff(a.Policy, b.Policy)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Widens)+len(d.Narrows) != 0 {
			t.Errorf("a policy differs from itself: %+v", d)
		}
	}
}

// TestDiffWorkingDirectory: a deny rule that names a path relative to
// the working directory and one that names it from /workspace decide
// alike in the workspace only; the diff asks elsewhere too.
func TestDiffWorkingDirectory(t *testing.T) {
	rel := parse(t, "a.json", `{"toolScopes": {"t": {"allow": [{"name": "cat", "command": "cat", "allowExtraArgs": true}],
  "deny": [{"name": "env", "command": "cat", "argPatterns": [[".env"]]}]}}}`)
	abs := parse(t, "b.json", `{"toolScopes": {"t": {"allow": [{"name": "cat", "command": "cat", "allowExtraArgs": true}],
  "deny": [{"name": "env", "command": "cat", "argPatterns": [["/workspace/.env"]]}]}}}`)
	d, err := Diff(rel.Policy, abs.Policy)
	if err != nil {
		t.Fatal(err)
	}
	if got := kindsOf(d.Widens); !slices.Equal(got, []string{KindDenyDropped}) {
		t.Errorf("widens %+v", d.Widens)
	}
}

// TestDiffGlobOverExactPath: a glob is probed on a segment no rule names,
// so an exact path of OLD that the glob matches hides nothing.
func TestDiffGlobOverExactPath(t *testing.T) {
	const tmpl = `{"toolScopes": {}, "egress": {"taskAllowlist": {"t": [{"host": "x.example", "inspect": true,
  "rules": [{"name": "r", "methods": ["GET"], "paths": [%q]}]}]}}}`
	exact := parse(t, "a.json", fmt.Sprintf(tmpl, "/a/x/b"))
	glob := parse(t, "b.json", fmt.Sprintf(tmpl, "/a/*/b"))
	d, err := Diff(exact.Policy, glob.Policy)
	if err != nil {
		t.Fatal(err)
	}
	if got := kindsOf(d.Widens); !slices.Equal(got, []string{KindNewPath}) || len(d.Narrows) != 0 {
		t.Errorf("widens %+v, narrows %+v", d.Widens, d.Narrows)
	}
}
