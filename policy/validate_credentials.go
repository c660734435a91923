package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// reservedEnv are the sandbox's own variables, which a credential's
// placeholder may not take (compared without case).
var reservedEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}

// hopHeaders are headers a header credential may not set: the proxy and
// the HTTP machinery own them.
var hopHeaders = []string{"Host", "Connection", "Content-Length", "Transfer-Encoding", "Te", "Trailer", "Upgrade",
	"Keep-Alive", "Proxy-Authorization", "Proxy-Authenticate", "Proxy-Connection", "Cookie"}

// checkCredentials checks each credential: its fields, and that every
// task it is for inspects its host (the proxy can add a header only to a
// request it reads), so that no credential is for a host no entry allows.
func checkCredentials(p *Policy) []*Error {
	if p.Egress == nil || len(p.Egress.Credentials) == 0 {
		return nil
	}
	g, gerr := egress.Compile(p.EgressConfig())
	var errs []*Error
	names, envs := map[string]bool{}, map[string]bool{}
	for i, c := range p.Egress.Credentials {
		at := strict.Index("egress.credentials", i)
		if !strict.Name(c.Name) || names[c.Name] {
			errs = append(errs, strict.Problem(at+".name", fmt.Sprintf("credential name %q is empty, has white space, or is used twice", c.Name), ""))
		}
		names[c.Name] = true
		errs = append(errs, checkCredentialValue(at, c)...)
		errs = append(errs, checkMatch(at, c.Methods, c.Paths, c.PathPrefixes)...)
		if c.SandboxEnv != "" {
			switch {
			case !envName(c.SandboxEnv) || slices.ContainsFunc(reservedEnv, func(r string) bool { return strings.EqualFold(r, c.SandboxEnv) }):
				errs = append(errs, strict.Problem(at+".sandboxEnv", fmt.Sprintf("%q is not a variable name a credential may set (letters, digits, _; not one of the sandbox's own)", c.SandboxEnv), ""))
			case envs[c.SandboxEnv]:
				errs = append(errs, strict.Problem(at+".sandboxEnv", fmt.Sprintf("%q is set by another credential too", c.SandboxEnv), ""))
			}
			envs[c.SandboxEnv] = true
		}
		for j, task := range c.Tasks {
			if _, ok := p.Egress.TaskAllowlist[task]; !ok {
				errs = append(errs, strict.Problem(strict.Index(at+".tasks", j), fmt.Sprintf("task %q has no allowlist", task), ""))
			}
		}
		if err := egress.ValidateCredentialHost(c.Host); err != nil {
			errs = append(errs, strict.Problem(at+".host", err.Error(), "a credential is for one host: a name or an IP address, optionally with :port"))
			continue
		}
		if gerr == nil {
			errs = append(errs, credentialReach(at, c, g, p.Egress)...)
		}
	}
	return errs
}

// checkCredentialValue checks how a credential is sent and where its value
// comes from.
func checkCredentialValue(at string, c Credential) []*Error {
	var errs []*Error
	switch c.Scheme {
	case "basic":
		if c.Username == "" || strings.ContainsAny(c.Username, ":\r\n\x00") {
			errs = append(errs, strict.Problem(fieldOr(at, "username", c.Username), "basic authentication needs a username without ':' or control characters", `git hosts take any user with a token: "x-access-token"`))
		}
	case "header":
		if !token(c.Header) || slices.ContainsFunc(hopHeaders, func(h string) bool { return strings.EqualFold(h, c.Header) }) {
			errs = append(errs, strict.Problem(fieldOr(at, "header", c.Header), fmt.Sprintf("header %q is not a header a credential may set", c.Header), `name an HTTP header such as "X-Api-Key"`))
		}
	case "bearer":
	default:
		errs = append(errs, strict.Problem(at+".scheme", fmt.Sprintf("unknown scheme %q", c.Scheme), "write bearer, basic or header"))
	}
	if c.Username != "" && c.Scheme != "basic" {
		errs = append(errs, strict.Problem(at+".username", "a username is for the basic scheme", ""))
	}
	if c.Header != "" && c.Scheme != "header" {
		errs = append(errs, strict.Problem(at+".header", "a header name is for the header scheme", ""))
	}
	switch {
	case (c.FromEnv == "") == (c.FromFile == ""):
		errs = append(errs, strict.Problem(at, fmt.Sprintf("credential %q needs exactly one of fromEnv and fromFile", c.Name),
			"the value comes from airlock's own environment or a file, never from the policy"))
	case c.FromEnv != "" && !envName(c.FromEnv):
		errs = append(errs, strict.Problem(at+".fromEnv", fmt.Sprintf("%q is not a variable name", c.FromEnv), ""))
	case c.FromFile != "" && (!path.IsAbs(c.FromFile) || path.Clean(c.FromFile) != c.FromFile):
		errs = append(errs, strict.Problem(at+".fromFile", fmt.Sprintf("%q is not a clean absolute path", c.FromFile), ""))
	}
	return errs
}

// fieldOr is at's field name when it was written (v is set), else at.
func fieldOr(at, name, v string) string {
	if v == "" {
		return at
	}
	return at + "." + name
}

// credentialReach checks that the tasks of c inspect its host.
func credentialReach(at string, c Credential, g *egress.Gate, eg *Egress) []*Error {
	host := c.Host
	if t, err := egress.SplitHostPort(c.Host, 0); err == nil {
		host = t.Host()
	}
	tasks, all := c.Tasks, len(c.Tasks) == 0
	if all {
		tasks = sortedKeys(eg.TaskAllowlist)
	}
	inspected := 0
	var errs []*Error
	for _, task := range tasks {
		entries := g.Reaches(task, host)
		var opaque []string
		for _, e := range sortedKeys(entries) {
			if entries[e] {
				inspected++
			} else {
				opaque = append(opaque, e)
			}
		}
		switch {
		case !all && len(entries) == 0:
			errs = append(errs, strict.Problem(at+".host", fmt.Sprintf("credential %q is for %q, which no entry of task %q allows", c.Name, c.Host, task), "allow the host in the task, with \"inspect\": true"))
		case !all && len(opaque) == len(entries):
			errs = append(errs, strict.Problem(at+".host", fmt.Sprintf("task %q allows %q only through %q, which is not inspected", task, c.Host, strings.Join(opaque, `", "`)),
				`add "inspect": true to the entry: the proxy adds the header only to requests it reads`))
		}
	}
	if all && inspected == 0 {
		errs = append(errs, strict.Problem(at+".host", fmt.Sprintf("credential %q is for %q, which no task's entry allows with inspection", c.Name, c.Host),
			`allow the host in a task with "inspect": true: the proxy adds the header only to requests it reads`))
	}
	return errs
}

// envName reports whether s is a portable environment variable name.
func envName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// checkBudgets checks the egress budgets: each for a task that has an
// allowlist, each per-host cap for a host the task allows, no count
// negative.
func checkBudgets(p *Policy) []*Error {
	var errs []*Error
	if p.Session != nil && p.Session.Egress != nil {
		errs = append(errs, checkBudget("session.egress", *p.Session.Egress, nil, "")...)
	}
	if p.Egress == nil {
		return errs
	}
	g, gerr := egress.Compile(p.EgressConfig())
	if gerr != nil {
		g = nil
	}
	for _, task := range sortedKeys(p.Egress.Budgets) {
		at := strict.Field("egress.budgets", task)
		if _, ok := p.Egress.TaskAllowlist[task]; !ok {
			errs = append(errs, strict.Problem(at, fmt.Sprintf("a budget for task %q, which has no allowlist", task), "name a task of egress.taskAllowlist"))
			continue
		}
		errs = append(errs, checkBudget(at, p.Egress.Budgets[task], g, task)...)
	}
	return errs
}

// checkBudget checks one budget; with g, its hosts must be allowed by task.
func checkBudget(at string, b Budget, g *egress.Gate, task string) []*Error {
	errs := checkLimits(at, b.Limits())
	for _, h := range sortedKeys(b.Hosts) {
		hat := strict.Field(at+".hosts", h)
		t, err := egress.ParseTarget(h, 0)
		switch {
		case err != nil || t.Host() != h:
			errs = append(errs, strict.Problem(hat, fmt.Sprintf("%q is not a host name or IP address in normal form", h), "write the host as the gate normalises it: lower case, no port, no trailing dot"))
		case g != nil && len(g.Reaches(task, h)) == 0:
			errs = append(errs, strict.Problem(hat, fmt.Sprintf("a budget for %q, which no entry of task %q allows", h, task), ""))
		}
		errs = append(errs, checkLimits(hat, b.Hosts[h])...)
	}
	return errs
}

func checkLimits(at string, l BudgetLimits) []*Error {
	var errs []*Error
	for _, f := range []struct {
		name string
		v    *int64
	}{{"bytesOut", l.BytesOut}, {"bytesIn", l.BytesIn}, {"requests", l.Requests}, {"connections", l.Connections}, {"concurrentConnections", l.ConcurrentConnections}} {
		if f.v != nil && *f.v < 1 {
			errs = append(errs, strict.Problem(at+"."+f.name, fmt.Sprintf("%s must be positive, got %d", f.name, *f.v), "remove the field for no cap"))
		}
	}
	return errs
}
