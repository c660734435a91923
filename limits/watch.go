package limits

import (
	"context"
	"time"
)

// pollInterval is how often Watch reads the group's counters. A CPU cap is
// overshot by at most this times the number of CPUs.
const pollInterval = 50 * time.Millisecond

// counters are what the watch reads each tick.
type counters struct {
	cpu      time.Duration
	cpuKnown bool
	oomKills int64
	pidsHits int64
}

// Watch enforces the caps that need watching, until ctx is done or a cap
// trips: the wall clock (counted from the call), the group's total CPU
// time, an OOM kill and the tasks cap being hit. When one trips, Watch
// records it (KilledBy), kills the whole group, calls onKill (if not nil)
// and returns. When ctx is done, Watch checks the counters once more, so
// that a cap that tripped just before the run ended (an OOM kill of the
// last process) is still attributed, and returns.
func (g *Group) Watch(ctx context.Context, onKill func(KilledBy)) {
	wall := time.NewTimer(g.caps.Wall)
	defer wall.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if k := g.check(); k != "" {
				g.trip(k, onKill)
			}
			return
		case <-wall.C:
			g.trip(KilledByWall, onKill)
			return
		case <-tick.C:
			if k := g.check(); k != "" {
				g.trip(k, onKill)
				return
			}
		}
	}
}

// check reads the counters once and names the cap that tripped, if any:
// an OOM kill, then a refused fork, then the CPU time.
func (g *Group) check() KilledBy {
	g.mu.Lock()
	c := g.sys.counters()
	g.mu.Unlock()
	switch {
	case c.oomKills > 0:
		return KilledByMemory
	case c.pidsHits > 0:
		return KilledByPids
	case c.cpuKnown && c.cpu >= g.caps.CPU:
		return KilledByCPU
	}
	return ""
}

// trip records k (unless a cap was recorded first), kills the group and
// tells onKill.
func (g *Group) trip(k KilledBy, onKill func(KilledBy)) {
	first := g.attribute(k)
	_ = g.KillAll() // Delete retries, and reports what it could not kill
	if first && onKill != nil {
		onKill(k)
	}
}

// waitFor polls cond, from every 50µs backing off to every 5ms, until it
// holds or timeout passes; it reports whether it held. (A killed process
// is gone in about a millisecond; a check costs some 10µs.)
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for d := 50 * time.Microsecond; ; d = min(d*3/2, 5*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(d)
	}
}
