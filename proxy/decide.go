package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/airlock-sandbox/airlock/decision"
)

// The proxy's own refusals, one fixed wording per path. The gate's
// decisions carry the gate's reasons.
const (
	reasonNoPort    = "egress to %+q refused: no port given (ask for host:port)"
	reasonLoop      = "egress to %s refused: it is this proxy's own listener (a request loop)"
	reasonUserinfo  = "egress to %+q refused: the request carries user credentials (user@host), which the proxy does not forward"
	reasonNoAddress = "egress to %s refused: the egress gate allowed the name but no checked address remained"
	// reasonFailed prefixes an upstream failure after an allow, so that a
	// client never mistakes it for a refusal.
	reasonFailed = "allowed by the egress gate; the connection then failed: "
)

// deny builds one of the proxy's own refusals.
func deny(format string, args ...any) decision.Decision {
	return decision.Decision{Gate: decision.GateEgress, Verdict: decision.Deny, Reason: fmt.Sprintf(format, args...)}
}

// errNoAddresses is a resolution that succeeded with an empty answer.
var errNoAddresses = errors.New("the name has no addresses")

// resolveError is a failed lookup of a name the gate allowed.
type resolveError struct {
	name string
	err  error
}

func (e *resolveError) Error() string { return "resolving " + e.name + ": " + e.err.Error() }
func (e *resolveError) Unwrap() error { return e.err }

// decide completes the decision on ev, whose Decision and Target hold
// the gate's static decision (CheckHost or CheckHostPort), and records the
// outcome in ev.Decision and ev.Resolved. For an allowed name it resolves
// the name once and returns the checked addresses to dial, in the
// resolver's order; for an allowed IP literal, the literal. A non-nil
// error means the gate allowed the name but resolving it failed
// (ev.Decision stays Allow).
func (p *Proxy) decide(ctx context.Context, ev *Event) ([]netip.Addr, error) {
	t := ev.Target
	if !ev.Decision.Allowed() {
		return nil, nil
	}
	if t.Port == 0 {
		ev.Decision = deny(reasonNoPort, ev.Requested)
		return nil, nil
	}
	addrs := []netip.Addr{t.Addr}
	if !t.Addr.IsValid() {
		resolved, err := p.resolve(ctx, t.Name)
		if err != nil {
			return nil, &upstreamError{err}
		}
		ev.Resolved = resolved
		ev.Decision, addrs = p.gate.CheckResolved(p.task, t, resolved)
		if !ev.Decision.Allowed() {
			return nil, nil
		}
		if len(addrs) == 0 {
			// The gate must never allow without an address; fail closed.
			ev.Decision = deny(reasonNoAddress, t)
			return nil, nil
		}
	}
	for _, a := range addrs {
		if ap := netip.AddrPortFrom(a, t.Port); p.isSelf(ap) {
			ev.Decision = deny(reasonLoop, ap)
			return nil, nil
		}
	}
	return addrs, nil
}

// resolve looks name up exactly once, as the fully qualified name: with
// its trailing dot, so that the resolver appends no search domain and
// ndots plays no part, and the addresses are those of the name the gate
// decided (docs/egress.md). Addresses come back unmapped: an IPv4-mapped
// IPv6 answer is the IPv4 address it carries (the gate checks both forms
// the same way, and the dial goes to IPv4 either way).
func (p *Proxy) resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, p.limits.DialTimeout)
	defer cancel()
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", name+".")
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = &net.DNSError{Err: os.ErrDeadlineExceeded.Error(), Name: name, IsTimeout: true}
	}
	if err == nil && len(addrs) == 0 {
		err = errNoAddresses
	}
	if err != nil {
		return nil, &resolveError{name: name, err: err}
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// open decides ev's target, reports the decision and, when the gate
// allowed it, takes a tunnel slot and dials a checked address. The
// decision takes in the entry's options (an inspected entry needs the
// proxy's CA) and the budgets (a tunnel past a cap is refused, with
// ev.Budget naming the budget). A refusal leaves ev.Decision denied and
// returns no error; an error is an upstream failure after an allow. On
// success the caller must release the slot.
func (p *Proxy) open(ctx context.Context, ev *Event) (net.Conn, error) {
	addrs, err := p.decide(ctx, ev)
	if ev.Decision.Allowed() && err == nil {
		p.admitTunnel(ev)
	}
	if rerr := p.decided(ev); rerr != nil {
		ev.use.done()
		return nil, rerr
	}
	if !ev.Decision.Allowed() {
		return nil, nil
	}
	if err != nil {
		ev.use.done()
		return nil, err
	}
	sl, err := p.tunnelShare.slot(ev.client)
	if err != nil {
		ev.use.done()
		return nil, err
	}
	c, ap, err := p.dial(ctx, addrs, ev.Target.Port)
	if err != nil {
		sl.release()
		ev.use.done()
		return nil, &upstreamError{err}
	}
	ev.tunnel = sl // released by finish
	ev.Dialled, ev.addrs = ap, addrs
	return c, nil
}

// admitTunnel takes in an allowed tunnel's entry options and budgets:
// an inspected entry without the proxy's CA is refused, and so is a
// tunnel past a budget's cap. An opaque tunnel counts as a request; an
// inspected one's requests count one by one.
func (p *Proxy) admitTunnel(ev *Event) {
	ev.entry = p.gate.Entry(p.task, ev.Decision.Rule)
	if ev.entry.Inspected() && p.ca == nil {
		ev.Decision = deny(reasonNoCA, ev.Target)
		return
	}
	use, err := p.budget.admit(ev.Target.Host(), !ev.entry.Inspected(), true)
	var be *budgetError
	if errors.As(err, &be) {
		ev.Decision, ev.Budget = deny("%s", be.reason), be.budget
		return
	}
	ev.use = use
}
