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

func (g *Group) watch(ctx context.Context, onKill func(KilledBy)) {
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
