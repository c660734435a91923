package egress

import (
	"errors"
	"fmt"
	"slices"
)

// CredentialConfig says which requests a credential is added to. Its
// value is not here: the proxy takes it from the environment or a file of
// the process that runs airlock, never from the policy.
type CredentialConfig struct {
	// Name names the credential in decisions and the audit stream.
	Name string
	// Host is the one destination it is for: an exact name or an IP
	// address, optionally with ":port" (any port without).
	Host string
	// Tasks are the tasks whose requests it is added to; none means every
	// task whose allowlist inspects Host.
	Tasks []string
	// Methods, Paths and PathPrefixes narrow the requests, as a rule's do.
	Methods, Paths, PathPrefixes []string
}

// credential is a compiled CredentialConfig.
type credential struct {
	name  string
	host  Target // Port 0: any port
	tasks []string
	match *httpRule
}

// compileCredential checks and compiles one credential's scope.
func compileCredential(c CredentialConfig) (*credential, error) {
	if c.Name == "" {
		return nil, errors.New("a credential needs a name")
	}
	e, err := parseEntry(c.Host)
	if err != nil {
		return nil, fmt.Errorf("host %q: %w", c.Host, err)
	}
	var t Target
	switch {
	case e.kind == kindExact:
		t = Target{Name: e.name, Port: e.port}
	case e.kind == kindPrefix && e.prefix.IsSingleIP():
		t = Target{Addr: e.prefix.Addr(), Port: e.port}
	default:
		return nil, fmt.Errorf("host %q: a credential is for one host: a name or an IP address, not a wildcard or a range", c.Host)
	}
	r, err := compileRule(RuleConfig{Name: c.Name, Methods: c.Methods, Paths: c.Paths, PathPrefixes: c.PathPrefixes})
	if err != nil {
		return nil, err
	}
	return &credential{name: c.Name, host: t, tasks: c.Tasks, match: r}, nil
}

// forTarget reports whether the credential is for task reaching t at
// all, whatever the request.
func (c *credential) forTarget(task string, t Target) bool {
	if len(c.tasks) > 0 && !slices.Contains(c.tasks, task) {
		return false
	}
	return c.host.Name == t.Name && c.host.Addr == t.Addr && (c.host.Port == 0 || c.host.Port == t.Port)
}

// Credential returns the name of the credential to add to the request q
// of task to t: the first the policy lists whose host, task, methods and
// paths match; "" when none does. A request whose path is not in
// canonical form (CanonicalPath) gets none.
func (g *Gate) Credential(task string, t Target, q *Request) string {
	if g == nil {
		return ""
	}
	var path string
	for _, c := range g.creds {
		if !c.forTarget(task, t) {
			continue
		}
		if path == "" {
			p, err := CanonicalPath(q.Path)
			if err != nil {
				return ""
			}
			path = p
		}
		if c.match.matches(q, path, nil, nil) { // a credential's scope has no query or header conditions
			return c.name
		}
	}
	return ""
}

// PlainCredentialRefusal is the reason a request to t that credential
// name is for is refused when it would go in the clear (tls false): a
// credential is sent over TLS only. It is "" when name is "" or tls is
// true. The proxy decides so, and explain and policy authoring say so.
func PlainCredentialRefusal(t Target, name string, tls bool) string {
	if name == "" || tls {
		return ""
	}
	return fmt.Sprintf("request to %s refused: credential %q is for it, and is sent over TLS only", t, name)
}

// Credentials returns the names of the credentials for task's requests
// to t, whatever their method and path: the destination that may answer
// with their values (nil when there are none).
func (g *Gate) Credentials(task string, t Target) []string {
	if g == nil {
		return nil
	}
	var names []string
	for _, c := range g.creds {
		if c.forTarget(task, t) {
			names = append(names, c.name)
		}
	}
	return names
}

// CredentialHost returns the host a credential is for, as the policy
// wrote it, for reasons; "" when there is no such credential.
func (g *Gate) CredentialHost(name string) string {
	if g == nil {
		return ""
	}
	for _, c := range g.creds {
		if c.name == name {
			return c.host.String()
		}
	}
	return ""
}
