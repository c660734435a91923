package proxy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// budgets holds the counters of the proxy's budgets (Config.Budgets).
// Hand-written: a few counters under one mutex, so that a byte granted is
// granted by every budget it counts in at once, and no count ever passes
// its cap. A nil *budgets counts nothing.
type budgets struct {
	mu      sync.Mutex
	scopes  []*budgetScope
	reached func(budgetCrossing) // reports a crossing, outside mu
}

// budgetScope is one Budget's counters: for all destinations, and for
// each host it caps.
type budgetScope struct {
	b     Budget
	all   *counter
	hosts map[string]*counter
}

// counter counts traffic against caps.
type counter struct {
	caps                     BudgetLimits
	out, in, requests, conns int64
	concurrent               int64
	reached                  string // the cap reached, once one is: sticky until the step ends
	open                     map[*budgetUse]struct{}
	scope                    *budgetScope
	host                     string // "" for all destinations
	bytesCapped, anyCapped   bool
}

// budgetCrossing is a cap reached, for the record.
type budgetCrossing struct {
	budget, host, cap string
	limit             int64
	reason            string
}

// budgetError refuses a request or a tunnel: a budget's cap is reached.
type budgetError struct{ reason, budget string }

func (e *budgetError) Error() string { return e.reason }

// errBudgetBytes ends a transfer whose bytes a budget no longer grants.
var errBudgetBytes = errors.New("a byte budget is used up")

func newBudgets(bs []Budget, reached func(budgetCrossing)) *budgets {
	if len(bs) == 0 {
		return nil
	}
	g := &budgets{reached: reached}
	for _, b := range bs {
		s := &budgetScope{b: b, hosts: map[string]*counter{}}
		s.all = newCounter(s, "", b.All)
		for h, l := range b.Hosts {
			s.hosts[h] = newCounter(s, h, l)
		}
		g.scopes = append(g.scopes, s)
	}
	return g
}

func newCounter(s *budgetScope, host string, l BudgetLimits) *counter {
	return &counter{caps: l, scope: s, host: host, open: map[*budgetUse]struct{}{},
		bytesCapped: l.BytesOut > 0 || l.BytesIn > 0,
		anyCapped:   l.BytesOut > 0 || l.BytesIn > 0 || l.Requests > 0 || l.Connections > 0 || l.Concurrent > 0}
}

// budgetUse is one connection's or request's place in the counters of
// the budgets that cover its host; its end is given back with done.
type budgetUse struct {
	g        *budgets
	counters []*counter
	end      atomic.Pointer[func()] // ends the connection when a budget it counts in is reached
	conn     bool                   // holds a concurrent connection
	once     sync.Once
}

// setEnd sets what ends u's connection when a budget it counts in is
// reached.
func (u *budgetUse) setEnd(end func()) {
	if u != nil {
		u.end.Store(&end)
	}
}

// counters returns the counters that cover host; g.mu is held.
func (g *budgets) countersFor(host string) []*counter {
	var cs []*counter
	for _, s := range g.scopes {
		if s.all.anyCapped {
			cs = append(cs, s.all)
		}
		if c := s.hosts[host]; c != nil && c.anyCapped {
			cs = append(cs, c)
		}
	}
	return cs
}

// reach marks c reached because of cap, and returns the crossing to
// report and the connections to end; g.mu is held.
func (c *counter) reach(capName string, limit int64) (budgetCrossing, []*budgetUse) {
	c.reached = capName
	x := budgetCrossing{budget: c.scope.b.Name, host: c.host, cap: capName, limit: limit,
		reason: fmt.Sprintf("budget %s reached: %s of %d for %s used up; new requests are refused and open tunnels ended", c.scope.b.Name, capName, limit, c.where())}
	return x, slices.Collect(maps.Keys(c.open))
}

// where names what c counts, for reasons.
func (c *counter) where() string {
	if c.host == "" {
		return "all destinations"
	}
	return fmt.Sprintf("%+q", c.host)
}

// settle reports crossings and ends connections, outside g.mu.
func (g *budgets) settle(xs []budgetCrossing, ends []*budgetUse) {
	for _, x := range xs {
		if g.reached != nil {
			g.reached(x)
		}
	}
	for _, u := range ends {
		u.endConn()
	}
}

// endConn ends u's connection, when it has one to end.
func (u *budgetUse) endConn() {
	if u == nil {
		return
	}
	if end := u.end.Load(); end != nil {
		(*end)()
	}
}

// refusal is why c refuses anything new, "" when it does not.
func (c *counter) refusal() string {
	if c.reached == "" {
		return ""
	}
	return fmt.Sprintf("budget %s reached: %s of %d for %s used up", c.scope.b.Name, c.reached, c.capOf(c.reached), c.where())
}

func (c *counter) capOf(name string) int64 {
	switch name {
	case "bytesOut":
		return c.caps.BytesOut
	case "bytesIn":
		return c.caps.BytesIn
	case "requests":
		return c.caps.Requests
	case "connections":
		return c.caps.Connections
	}
	return c.caps.Concurrent
}

// admit counts a new request (request) and a new upstream connection
// (conn) to host, or refuses them when a budget covering host is reached
// or would pass a cap (which reaches it, except for concurrent
// connections, which refuse only the one past the cap). A connection is
// ended when a budget it counts in is reached later (setEnd says how).
func (g *budgets) admit(host string, request, conn bool) (*budgetUse, error) {
	if g == nil {
		return nil, nil
	}
	g.mu.Lock()
	cs := g.countersFor(host)
	var xs []budgetCrossing
	var ends []*budgetUse
	var err error
	for _, c := range cs {
		if why := c.refusal(); why != "" {
			err = &budgetError{why, c.scope.b.Name}
			break
		}
		var capName string
		var limit int64
		switch {
		case request && c.caps.Requests > 0 && c.requests >= c.caps.Requests:
			capName, limit = "requests", c.caps.Requests
		case conn && c.caps.Connections > 0 && c.conns >= c.caps.Connections:
			capName, limit = "connections", c.caps.Connections
		case conn && c.caps.Concurrent > 0 && c.concurrent >= c.caps.Concurrent:
			x := budgetCrossing{budget: c.scope.b.Name, host: c.host, cap: "concurrentConnections", limit: c.caps.Concurrent,
				reason: fmt.Sprintf("budget %s: concurrentConnections of %d for %s are open; this one is refused", c.scope.b.Name, c.caps.Concurrent, c.where())}
			xs = append(xs, x)
			err = &budgetError{x.reason, c.scope.b.Name}
		}
		if capName != "" {
			x, e := c.reach(capName, limit)
			xs, ends = append(xs, x), append(ends, e...)
			err = &budgetError{x.reason, c.scope.b.Name}
		}
		if err != nil {
			break
		}
	}
	var u *budgetUse
	if err == nil && len(cs) > 0 {
		u = &budgetUse{g: g, counters: cs, conn: conn}
		for _, c := range cs {
			if request {
				c.requests++
			}
			if conn {
				c.conns++
				c.concurrent++
				c.open[u] = struct{}{}
			}
		}
	}
	g.mu.Unlock()
	g.settle(xs, ends)
	return u, err
}

// done gives u's connection back.
func (u *budgetUse) done() {
	if u == nil {
		return
	}
	u.once.Do(func() {
		u.g.mu.Lock()
		defer u.g.mu.Unlock()
		for _, c := range u.counters {
			if u.conn {
				c.concurrent--
			}
			delete(c.open, u)
		}
	})
}

// bytesCapped reports whether a budget caps the bytes of u's transfers,
// so that they must be counted as they pass (no splice).
func (u *budgetUse) bytesCapped() bool {
	if u == nil {
		return false
	}
	for _, c := range u.counters {
		if c.bytesCapped {
			return true
		}
	}
	return false
}

// take asks every budget u counts in for n more bytes one way (out: to
// the destination) and returns how many all of them grant. When that is
// less than n, the budget that ran out is reached; settle, not nil then,
// reports the crossing and ends the connections counted in it, and is to
// be called once the granted bytes have been passed on (so that what was
// counted is what was sent).
func (u *budgetUse) take(out bool, n int64) (grant int64, settle func()) {
	if u == nil || n <= 0 {
		return n, nil
	}
	g := u.g
	g.mu.Lock()
	defer g.mu.Unlock()
	grant = n
	var short *counter
	for _, c := range u.counters {
		if c.reached != "" {
			return 0, u.endConn
		}
		limit, used := c.caps.BytesIn, c.in
		if out {
			limit, used = c.caps.BytesOut, c.out
		}
		if limit > 0 && limit-used < grant {
			grant, short = limit-used, c
		}
	}
	for _, c := range u.counters {
		if out {
			c.out += grant
		} else {
			c.in += grant
		}
	}
	if short == nil {
		return grant, nil
	}
	name, limit := "bytesIn", short.caps.BytesIn
	if out {
		name, limit = "bytesOut", short.caps.BytesOut
	}
	x, ends := short.reach(name, limit)
	return grant, func() { g.settle([]budgetCrossing{x}, ends) }
}

// resetStep starts the per-step budgets over: their counts but the open
// connections, and whatever they had reached.
func (g *budgets) resetStep() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.scopes {
		if !s.b.PerStep {
			continue
		}
		for _, c := range append([]*counter{s.all}, slices.Collect(maps.Values(s.hosts))...) {
			c.out, c.in, c.requests, c.conns, c.reached = 0, 0, 0, 0, ""
		}
	}
}
