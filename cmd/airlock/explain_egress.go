package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
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
		return json.NewEncoder(w).Encode(ex)
	}
	rule := ex.Rule
	if rule == "" {
		rule = "(none)"
	}
	fmt.Fprintf(w, "gate:      %s\ndecision:  %s\nreason:    %s\nrule:      %s\ntarget:    %s\n", ex.Gate, ex.Verdict, ex.Reason, rule, ex.Target)
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
