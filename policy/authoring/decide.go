package authoring

import (
	"fmt"
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

// request decides an entry example: the destination, then, for a
// request, the request itself as the proxy decides one to an inspected
// entry (an entry that is not inspected carries it unread). It returns
// the destination's decision and the request's (the destination's again
// for a destination example, or when the destination is refused; the
// entry's name as its rule when the entry allows it without one).
func (d *decider) request(task string, x policy.EntryExample) (host, req decision.Decision) {
	host, t := d.eg.CheckHostPort(task, x.HostPort, x.DefaultPort())
	if !host.Allowed() || x.URL == nil {
		return host, host
	}
	e := d.eg.Entry(task, host.Rule)
	if !e.Inspected() {
		return host, host
	}
	q := &egress.Request{Host: t.String(), Method: x.Method, Path: x.URL.EscapedPath(), RawQuery: x.URL.RawQuery}
	req = e.CheckRequest(q)
	if !req.Allowed() {
		return host, req
	}
	if why := egress.PlainCredentialRefusal(t, d.eg.Credential(task, t, q), x.URL.Scheme == "https"); why != "" {
		req = decision.Decision{Gate: decision.GateEgress, Rule: req.Rule, Reason: why}
	} else if req.Rule == "" {
		req.Rule = host.Rule
	}
	return host, req
}

// credential names the credential the proxy would add to the request
// x of task, "" for none.
func (d *decider) credential(task string, x policy.EntryExample) string {
	host, t := d.eg.CheckHostPort(task, x.HostPort, x.DefaultPort())
	if !host.Allowed() || x.URL == nil {
		return ""
	}
	q := &egress.Request{Host: t.String(), Method: x.Method, Path: x.URL.EscapedPath(), RawQuery: x.URL.RawQuery}
	return d.eg.Credential(task, t, q)
}

// shown is a decision as a table shows it: the verdict, and the rule
// that took it.
func shown(d decision.Decision) string {
	if d.Rule == "" {
		return d.Verdict.String()
	}
	return fmt.Sprintf("%s (%s)", d.Verdict, d.Rule)
}
