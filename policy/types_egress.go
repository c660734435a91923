package policy

// AllowEntry is one destination of a task's allowlist: a host string
// ("pypi.org", "*.example.com", "10.0.0.0/8:5432"), or an object naming
// the host with what the proxy does with its tunnels.
type AllowEntry struct {
	// Host is the destination, written as a string entry is.
	Host string `json:"host" jsonschema:"required,minLength=1"`
	// Inspect makes the proxy terminate the host's TLS with a certificate
	// of the session's CA (which the sandbox trusts) and decide every
	// request by Rules.
	Inspect bool `json:"inspect,omitempty"`
	// Rules decide each request to an inspected host: deny rules win, and
	// once there is a rule what no allow rule matches is refused.
	Rules []HTTPRule `json:"rules,omitempty"`
	// UpstreamCA is an absolute path to a PEM file of the CAs the host's
	// certificate must chain to (a private registry); without it, the
	// host's system roots.
	UpstreamCA string `json:"upstreamCa,omitempty"`
	// Protocol is what a tunnel to the host must carry: auto (TLS on port
	// 443; the name checked in TLS and HTTP wherever seen), tls, http, or
	// raw (not looked at).
	Protocol string `json:"protocol,omitempty" jsonschema:"enum=auto,enum=tls,enum=http,enum=raw"`
	// Examples are destinations and requests the entry must allow and
	// must not, which policy check and policy test run (docs/policy.md,
	// "Examples").
	Examples *EntryExamples `json:"examples,omitempty"`

	short bool // written as a string
}

// FromShorthand fills e from its string form, a host alone.
func (e *AllowEntry) FromShorthand(s string) error {
	*e = AllowEntry{Host: s, short: true}
	return nil
}

// Short reports whether e was written as a host string.
func (e AllowEntry) Short() bool { return e.short }

// HTTPRule is one rule on the requests to an inspected host. Each
// condition given must hold; one left out matches any request.
type HTTPRule struct {
	// Name names the rule in decisions and the audit stream.
	Name string `json:"name" jsonschema:"required,minLength=1"`
	// Action is allow (the default) or deny; deny wins.
	Action string `json:"action,omitempty" jsonschema:"enum=allow,enum=deny"`
	// Methods are HTTP methods in upper case (GET, HEAD, POST, PUT,
	// PATCH, DELETE, OPTIONS, TRACE and WebDAV's).
	Methods []string `json:"methods,omitempty" jsonschema:"enum=GET,enum=HEAD,enum=POST,enum=PUT,enum=PATCH,enum=DELETE,enum=OPTIONS,enum=TRACE,enum=PROPFIND,enum=PROPPATCH,enum=MKCOL,enum=COPY,enum=MOVE,enum=LOCK,enum=UNLOCK"`
	// Paths are globs over the decoded path: "*" within a segment, "**"
	// across segments ("/repos/acme/**").
	Paths []string `json:"paths,omitempty"`
	// PathPrefixes are plain prefixes of the decoded path.
	PathPrefixes []string `json:"pathPrefixes,omitempty"`
	// Query maps a query parameter to its allowed values ("*": any). An
	// allow rule needs the parameter with only listed values; a deny rule
	// matches on any listed value.
	Query map[string][]string `json:"query,omitempty"`
	// Headers are conditions on request headers, as Query's.
	Headers map[string][]string `json:"headers,omitempty"`
	// WebSocket lets the requests this allow rule matches upgrade to
	// WebSocket.
	WebSocket bool `json:"websocket,omitempty"`
}

// Credential is a header the proxy adds to the requests to one host that
// match, with a value from airlock's own environment or a file, never
// from the policy; the sandbox sees at most a placeholder.
type Credential struct {
	// Name names the credential in the audit stream.
	Name string `json:"name" jsonschema:"required,minLength=1"`
	// Host is the one host it is for, a name or an IP address, with an
	// optional ":port"; a task's allowlist must inspect it.
	Host string `json:"host" jsonschema:"required,minLength=1"`
	// Tasks limits it to these tasks; without it, every task whose
	// allowlist inspects Host.
	Tasks []string `json:"tasks,omitempty"`
	// Scheme is how the value is sent: bearer (Authorization: Bearer V),
	// basic (Authorization: Basic of username:V, as git over HTTPS asks),
	// or header (the header named by Header, set to V).
	Scheme string `json:"scheme" jsonschema:"required,enum=bearer,enum=basic,enum=header"`
	// Username is the user of basic authentication.
	Username string `json:"username,omitempty"`
	// Header is the header a header credential sets.
	Header string `json:"header,omitempty"`
	// FromEnv names the variable of airlock's own environment that holds
	// the value.
	FromEnv string `json:"fromEnv,omitempty"`
	// FromFile is an absolute path to a file holding the value (one line);
	// the sandbox never sees it.
	FromFile string `json:"fromFile,omitempty"`
	// Methods, Paths and PathPrefixes narrow the requests it is added to,
	// as a rule's do.
	Methods      []string `json:"methods,omitempty" jsonschema:"enum=GET,enum=HEAD,enum=POST,enum=PUT,enum=PATCH,enum=DELETE,enum=OPTIONS,enum=TRACE,enum=PROPFIND,enum=PROPPATCH,enum=MKCOL,enum=COPY,enum=MOVE,enum=LOCK,enum=UNLOCK"`
	Paths        []string `json:"paths,omitempty"`
	PathPrefixes []string `json:"pathPrefixes,omitempty"`
	// SandboxEnv names a variable set inside the sandbox to the
	// credential's placeholder, for tools that want a token to be set.
	SandboxEnv string `json:"sandboxEnv,omitempty"`
}

// Budget caps traffic through the proxy; reaching a cap refuses new
// requests and ends open tunnels. Bytes are the tunnels' bytes, and the
// bodies of HTTP requests and responses; connections are upstream
// connections.
type Budget struct {
	// BytesOut caps bytes sent to destinations.
	BytesOut *int64 `json:"bytesOut,omitempty" jsonschema:"minimum=1"`
	// BytesIn caps bytes received from destinations.
	BytesIn *int64 `json:"bytesIn,omitempty" jsonschema:"minimum=1"`
	// Requests caps the requests the proxy decides: each absolute-form
	// HTTP request, each request inside an inspected tunnel, and each
	// opaque tunnel.
	Requests *int64 `json:"requests,omitempty" jsonschema:"minimum=1"`
	// Connections caps upstream connections opened in all.
	Connections *int64 `json:"connections,omitempty" jsonschema:"minimum=1"`
	// ConcurrentConnections caps upstream connections open at once.
	ConcurrentConnections *int64 `json:"concurrentConnections,omitempty" jsonschema:"minimum=1"`
	// Hosts caps the traffic to single hosts (a name or an IP address as
	// the request names it).
	Hosts map[string]BudgetLimits `json:"hosts,omitempty"`
}

// Limits returns b's caps for all its hosts together, without Hosts.
func (b Budget) Limits() BudgetLimits {
	return BudgetLimits{b.BytesOut, b.BytesIn, b.Requests, b.Connections, b.ConcurrentConnections}
}

// BudgetLimits are a budget's caps for one host.
type BudgetLimits struct {
	// BytesOut caps bytes sent to the host.
	BytesOut *int64 `json:"bytesOut,omitempty" jsonschema:"minimum=1"`
	// BytesIn caps bytes received from the host.
	BytesIn *int64 `json:"bytesIn,omitempty" jsonschema:"minimum=1"`
	// Requests caps requests and tunnels to the host.
	Requests *int64 `json:"requests,omitempty" jsonschema:"minimum=1"`
	// Connections caps upstream connections to the host in all.
	Connections *int64 `json:"connections,omitempty" jsonschema:"minimum=1"`
	// ConcurrentConnections caps upstream connections to the host at once.
	ConcurrentConnections *int64 `json:"concurrentConnections,omitempty" jsonschema:"minimum=1"`
}
