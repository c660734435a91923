package authoring

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/policy"
)

// decider asks one policy's gates, compiled once.
type decider struct {
	cmd *cmdgate.Gate
	eg  *egress.Gate
}

// newDecider compiles p's gates. local is the host's own addresses as
// the egress gate should see them (nil: this host's, as the proxy does).
func newDecider(p *policy.Policy, local egress.LocalAddrs) (*decider, error) {
	cfg := p.EgressConfig()
	cfg.Local = local
	g, err := egress.Compile(cfg)
	if err != nil {
		return nil, fmt.Errorf("compiling the egress gate: %w", err)
	}
	return &decider{cmd: cmdgate.Compile(p), eg: g}, nil
}

// workspace is the working directory a command is decided in when
// nothing says otherwise, as a run without --cwd is.
var workspace = enforcer.StepDir("")

// command is the command gate's decision on tool running argv (the
// command, then its arguments) in the workspace.
func (d *decider) command(tool string, argv []string) decision.Decision {
	return d.commandIn(tool, argv, workspace)
}

// commandIn is the command gate's decision on tool running argv in dir.
func (d *decider) commandIn(tool string, argv []string, dir string) decision.Decision {
	if len(argv) == 0 {
		return d.cmd.Decide(tool, "", nil, dir)
	}
	return d.cmd.Decide(tool, argv[0], argv[1:], dir)
}

// resolved is the egress gate's decision on task reaching host:port once
// the name resolved to addrs (none: the static decision).
func (d *decider) resolved(task, host string, port uint16, addrs []netip.Addr) decision.Decision {
	dec, t := d.eg.CheckHost(task, host, port)
	if !dec.Allowed() || len(addrs) == 0 || t.IsIP() {
		return dec
	}
	dec, _ = d.eg.CheckResolved(task, t, addrs)
	return dec
}

// RequestDecision is how the proxy would decide one request.
type RequestDecision struct {
	// Target is the request's destination as the gate normalised it.
	Target egress.Target
	// Host is the gate's decision on the destination.
	Host decision.Decision
	// Inspected says whether the allowlist entry that allowed the
	// destination (Host.Rule) has the proxy read its requests.
	Inspected bool
	// Request is the decision on the request itself by the entry's rules
	// (its zero value when the entry is not inspected), refused when the
	// credential the proxy would add would go in the clear.
	Request decision.Decision
	// Credential names the credential the proxy would add, "" for none.
	Credential string
}

// DecideRequest decides the request x (a request example: its URL is
// set) of task with the headers hdr (nil for none) as the proxy behind g
// would: the destination, then, on an inspected entry, the request as
// forwarded, without the headers the proxy drops (hdr is edited so).
func DecideRequest(g *egress.Gate, task string, x policy.EntryExample, hdr http.Header) RequestDecision {
	var r RequestDecision
	r.Host, r.Target = g.CheckHostPort(task, x.HostPort, x.DefaultPort())
	if !r.Host.Allowed() {
		return r
	}
	e := g.Entry(task, r.Host.Rule)
	if r.Inspected = e.Inspected(); !r.Inspected {
		return r
	}
	q := proxyRequest(r.Target, x, hdr)
	r.Request = e.CheckRequest(q)
	if r.Request.Allowed() {
		r.Credential = g.Credential(task, r.Target, q)
	}
	if why := egress.PlainCredentialRefusal(r.Target, r.Credential, x.URL.Scheme == "https"); why != "" {
		r.Request = decision.Decision{Gate: decision.GateEgress, Rule: r.Request.Rule, Reason: why}
		r.Credential = ""
	}
	return r
}

// proxyRequest is the request x to t as the proxy decides it: with the
// headers of hdr it forwards.
func proxyRequest(t egress.Target, x policy.EntryExample, hdr http.Header) *egress.Request {
	up := egress.ForwardHeader(hdr)
	return &egress.Request{Host: t.String(), Method: x.Method, Path: x.URL.EscapedPath(), RawQuery: x.URL.RawQuery, Header: hdr, Upgrade: up}
}

// request decides an entry example: the destination, then, for a
// request, the request itself as the proxy decides one to an inspected
// entry (an entry that is not inspected carries it unread). It returns
// the destination's decision and the request's (the destination's again
// for a destination example, or when the destination is refused; the
// entry's name as its rule when the entry allows it without one).
func (d *decider) request(task string, x policy.EntryExample) (host, req decision.Decision) {
	if x.URL == nil {
		host, _ = d.eg.CheckHostPort(task, x.HostPort, 0)
		return host, host
	}
	r := DecideRequest(d.eg, task, x, nil)
	if !r.Inspected {
		return r.Host, r.Host
	}
	req = r.Request
	if req.Allowed() && req.Rule == "" {
		req.Rule = r.Host.Rule
	}
	return r.Host, req
}

// credential names the credential the proxy would add to the request
// x of task, "" for none.
func (d *decider) credential(task string, x policy.EntryExample) string {
	host, t := d.eg.CheckHostPort(task, x.HostPort, x.DefaultPort())
	if !host.Allowed() || x.URL == nil {
		return ""
	}
	return d.eg.Credential(task, t, proxyRequest(t, x, nil))
}

// shown is a decision as a table shows it: the verdict, and the rule
// that took it.
func shown(d decision.Decision) string {
	if d.Rule == "" {
		return d.Verdict.String()
	}
	return fmt.Sprintf("%s (%s)", d.Verdict, d.Rule)
}
