package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/authoring"
)

// egressExplanation is explain's output for the egress gate.
type egressExplanation struct {
	Gate    decision.Gate    `json:"gate"`
	Verdict decision.Verdict `json:"decision"`
	Reason  string           `json:"reason"`
	Rule    string           `json:"rule"`
	// Target is the destination as the gate normalised it.
	Target string `json:"target"`
	// Resolved lists every address the name resolved to (--resolve),
	// and Dialable the ones the proxy would dial.
	Resolved []netip.Addr `json:"resolved,omitempty"`
	Dialable []netip.Addr `json:"dialable,omitempty"`
	// Policy is the policy that decided.
	Policy policy.Info `json:"policy"`
}

// explainEgress prints the egress gate's decision for task reaching host;
// with resolve, the decision the proxy would take after one lookup.
func explainEgress(ctx context.Context, w io.Writer, pol *policy.Loaded, task, host string, resolve, asJSON bool) error {
	g, err := egress.Compile(pol.EgressConfig())
	if err != nil {
		return err
	}
	d, t := g.CheckHostPort(task, host, 0)
	ex := egressExplanation{Target: t.String(), Policy: pol.Info()}
	if resolve && d.Allowed() && !t.IsIP() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		// Fully qualified, as the proxy resolves it: no search domain.
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", t.Name+".")
		if err != nil {
			return fmt.Errorf("explain: resolve %s: %w", t.Name, err)
		}
		ex.Resolved = addrs
		d, ex.Dialable = g.CheckResolved(task, t, addrs)
	}
	ex.Gate, ex.Verdict, ex.Reason, ex.Rule = d.Gate, d.Verdict, d.Why(), d.Rule
	if asJSON {
		return termtext.WriteJSON(w, ex, "")
	}
	fmt.Fprintf(w, "gate:      %s\ndecision:  %s\nreason:    %s\nrule:      %s\ntarget:    %s\n", ex.Gate, ex.Verdict, ex.Reason, cmp.Or(ex.Rule, "(none)"), ex.Target)
	if ex.Resolved != nil {
		fmt.Fprintf(w, "resolved:  %s\ndialable:  %s\n", joinAddrs(ex.Resolved), joinAddrs(ex.Dialable))
	}
	return nil
}

func joinAddrs(addrs []netip.Addr) string {
	if len(addrs) == 0 {
		return "(none)"
	}
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// requestExplanation is explain's output for a request: at the top the
// final decision (the request's on an inspected host, else the host's),
// then the host's decision and the request's.
type requestExplanation struct {
	egressExplanation
	// Host is the gate's decision on the request's host.
	Host stageDecision `json:"host"`
	// Request is the decision on the request itself.
	Request requestDecision `json:"request"`
}

// stageDecision is one step's decision on the way to the final one.
type stageDecision struct {
	Verdict decision.Verdict `json:"decision"`
	Reason  string           `json:"reason"`
	Rule    string           `json:"rule"`
}

// requestDecision is how the proxy would decide one request to a host the
// gate allows.
type requestDecision struct {
	stageDecision
	// Entry is the allowlist entry that allowed the host; Inspected says
	// whether the proxy reads its requests.
	Entry     string `json:"entry"`
	Inspected bool   `json:"inspected"`
	// Credential names the credential the proxy would add, "" for none.
	Credential string `json:"credential,omitempty"`
}

// explainRequest prints the gate's decision on rawURL's host for task,
// then the decision on the request (method, path, query, headers): the
// rule of an inspected entry that decides it, and the credential added.
// The JSON's top-level decision is the final one.
func explainRequest(w io.Writer, pol *policy.Loaded, task, rawURL, method string, headers []string, asJSON bool) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError{fmt.Errorf("explain: --url %q: want an absolute http or https URL", rawURL)}
	}
	if method == "" {
		method = "GET"
	}
	hdr := http.Header{}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return usageError{fmt.Errorf("explain: --header %q: want NAME:VALUE", h)}
		}
		hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	g, err := egress.Compile(pol.EgressConfig())
	if err != nil {
		return err
	}
	r := authoring.DecideRequest(g, task, policy.EntryExample{HostPort: u.Host, Method: method, URL: u}, hdr)
	ex := requestExplanation{egressExplanation: egressExplanation{Gate: r.Host.Gate, Target: r.Target.String(), Policy: pol.Info()},
		Host: stageDecision{Verdict: r.Host.Verdict, Reason: r.Host.Why(), Rule: r.Host.Rule}}
	final := ex.Host
	switch {
	case !r.Host.Allowed():
		ex.Request = requestDecision{stageDecision: stageDecision{Reason: "the host is refused, so every request to it is"}}
	case !r.Inspected:
		ex.Request = requestDecision{stageDecision: stageDecision{Verdict: decision.Allow,
			Reason: fmt.Sprintf("entry %q is not inspected: the tunnel is opaque, and what it carries is not decided request by request", r.Host.Rule)},
			Entry: r.Host.Rule}
	default:
		ex.Request = requestDecision{stageDecision: stageDecision{Verdict: r.Request.Verdict, Reason: r.Request.Why(), Rule: r.Request.Rule},
			Entry: r.Host.Rule, Inspected: true, Credential: r.Credential}
		final = ex.Request.stageDecision
	}
	ex.Verdict, ex.Reason, ex.Rule = final.Verdict, final.Reason, final.Rule
	if asJSON {
		return termtext.WriteJSON(w, ex, "")
	}
	fmt.Fprintf(w, "gate:      %s\ndecision:  %s\nreason:    %s\nrule:      %s\ntarget:    %s\n", ex.Gate, ex.Host.Verdict, ex.Host.Reason, cmp.Or(ex.Host.Rule, "(none)"), ex.Target)
	fmt.Fprintf(w, "request:   %s %s\ndecision:  %s\nreason:    %s\nrule:      %s\ncredential: %s\n",
		termtext.Escape(method), termtext.Escape(cmp.Or(u.RequestURI(), "(none)")), ex.Request.Verdict, ex.Request.Reason, cmp.Or(ex.Request.Rule, "(none)"), cmp.Or(ex.Request.Credential, "(none)"))
	return nil
}
