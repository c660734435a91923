package audit

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Coalescing (docs/audit.md, "Floods"): a run that repeats one refusal
// (a sandbox hammering the proxy with the same denied connection) would
// otherwise write, and sync, one record per attempt. A Log writes the
// first of a run's identical refusals in full; those that follow within
// the same second are counted, and written as one record per second that
// carries their count (Context.Count, WindowSeconds 1, details
// "coalescedFrom" naming the full record's seq). A run that varies its
// refusals to escape this is capped too: past maxFullPerSecond full
// refusal records in one second, its further refusals of that kind are
// counted into one record per second naming up to maxOverflowNames of
// their subjects. Every refusal is counted: the records without a count
// plus the counts add up to the refusals made. The counts of a second
// are written by the first append after it, by a timer a second after
// the first one counted, and when the run ends or the Log closes; a crash
// loses at most that second's counts.

const (
	coalesceWindow   = time.Second
	coalesceIdle     = 10 * time.Second // a key unseen this long is written in full again
	maxFullPerSecond = 50
	maxOverflowNames = 16
	maxBuckets       = 4096
)

// bucket counts the refusals of one key within the current window.
type bucket struct {
	first    Event     // the full record (its seq set once written), or the overflow's template
	start    time.Time // the window's start
	seen     time.Time // the last refusal counted or written
	count    int       // refusals counted in this window, not yet written
	names    []string  // overflow: the distinct subjects counted
	overflow bool
}

// runRate counts a run's full refusal records within one second.
type runRate struct {
	start time.Time
	n     int
}

// coalescer is a Log's coalescing state, guarded by the Log's mutex.
type coalescer struct {
	on      bool // WithCoalescing
	buckets map[[32]byte]*bucket
	rates   map[string]*runRate
	timer   *time.Timer
}

// WithCoalescing makes the Log count a run's repeated refusals instead of
// writing each (docs/audit.md, "Floods"). Close, or the run's End, writes
// the last counts: a Log that coalesces must be closed.
func WithCoalescing() Option { return func(l *Log) { l.co.on = true } }

// flushCounts writes the pending count records (all of them with force,
// else those whose second is over; only run's when run is not "").
func (l *Log) flushCounts(force bool, run string) error {
	_, _, err := l.do(nil, false, force, run)
	return err
}

// arm sets the timer that writes the count records of a second that no
// later append writes. It runs with l.mu held.
func (l *Log) arm() {
	if l.f == nil || l.co.timer != nil || !l.co.pending() {
		return
	}
	l.co.timer = time.AfterFunc(coalesceWindow, func() {
		l.mu.Lock()
		l.co.timer = nil
		l.mu.Unlock()
		_ = l.flushCounts(false, "")
	})
}

// stop stops the timer, when the Log closes.
func (c *coalescer) stop() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// coalescable reports whether ev is a refusal that may be coalesced: a
// denial made for a run.
func coalescable(ev *Event) bool {
	return ev.Decision == DecisionDeny && ev.Context.RunID != "" &&
		(ev.Kind == KindEgress || ev.Kind == KindCommand)
}

// refusalKey identifies identical refusals: all of the event but its
// time and the client's own address (a new source port each attempt).
func refusalKey(ev *Event) [32]byte {
	c := ev.Context
	if c.Details != nil {
		c.Details = maps.Clone(c.Details)
		delete(c.Details, "client")
	}
	b, _ := json.Marshal(struct {
		K Kind
		D string
		R string
		C Context
	}{ev.Kind, ev.Decision, ev.Reason, c})
	return sha256.Sum256(b)
}

// overflowKey is the key of a run's refusals of one kind past the rate.
func overflowKey(ev *Event) [32]byte {
	return sha256.Sum256([]byte("overflow\x00" + ev.Context.RunID + "\x00" + string(ev.Kind)))
}

// take decides what to do with ev at now: true when it is a refusal
// that was counted (not to be written now), false when it is to be
// written in full, with its new bucket (to learn its seq) when it is a
// refusal.
func (c *coalescer) take(ev *Event, now time.Time) (bool, *bucket) {
	if !c.on || ev == nil || !coalescable(ev) {
		return false, nil
	}
	if c.buckets == nil {
		c.buckets, c.rates = map[[32]byte]*bucket{}, map[string]*runRate{}
	}
	key := refusalKey(ev)
	if b := c.buckets[key]; b != nil && now.Sub(b.seen) < coalesceIdle {
		b.tally(now)
		return true, nil
	}
	r := c.rates[ev.Context.RunID]
	if r == nil || now.Sub(r.start) >= coalesceWindow {
		r = &runRate{start: now}
		c.rates[ev.Context.RunID] = r
	}
	if r.n >= maxFullPerSecond {
		ok := overflowKey(ev)
		b := c.buckets[ok]
		if b == nil {
			b = &bucket{overflow: true, start: now, first: Event{Kind: ev.Kind, Decision: DecisionDeny,
				Context: Context{RunID: ev.Context.RunID, Tool: ev.Context.Tool, Task: ev.Context.Task, Gate: ev.Context.Gate}}}
			c.buckets[ok] = b
		}
		b.tally(now)
		if name := subjectName(ev); len(b.names) < maxOverflowNames && !slices.Contains(b.names, name) {
			b.names = append(b.names, name)
		}
		return true, nil
	}
	r.n++
	if len(c.buckets) >= maxBuckets {
		c.expire(now, true)
	}
	b := &bucket{first: *ev, start: now, seen: now}
	c.buckets[key] = b
	return false, b
}

// tally counts one more refusal in b at now, in a new window when b's
// last one is over.
func (b *bucket) tally(now time.Time) {
	if b.count == 0 && now.Sub(b.start) >= coalesceWindow {
		b.start = now
	}
	b.count++
	b.seen = now
}

// subjectName names a refusal's subject in an overflow record.
func subjectName(ev *Event) string {
	c := &ev.Context
	if ev.Kind == KindEgress {
		return clipString(c.Host, 256) + ":" + strconv.Itoa(int(c.Port))
	}
	return clipString(c.Command, 256)
}

// due returns the count records of the windows that ended by now (all,
// with force; only the run's, when run is not ""), and a function to call
// once they are written, which starts their keys' next windows.
func (c *coalescer) due(now time.Time, force bool, run string) ([]Event, func()) {
	var out []Event
	var done []*bucket
	for _, b := range c.buckets {
		if b.count == 0 || run != "" && b.first.Context.RunID != run {
			continue
		}
		if force || now.Sub(b.start) >= coalesceWindow {
			out = append(out, b.record())
			done = append(done, b)
		}
	}
	slices.SortFunc(out, func(a, b Event) int { return strings.Compare(a.Reason, b.Reason) })
	return out, func() {
		for _, b := range done {
			b.count, b.names, b.start = 0, nil, now
		}
		c.expire(now, false)
		if run != "" {
			delete(c.rates, run)
		}
	}
}

// failed forgets a key whose full record could not be written, so that
// the next of its refusals is written in full.
func (c *coalescer) failed(b *bucket) {
	for k, x := range c.buckets {
		if x == b {
			delete(c.buckets, k)
		}
	}
}

// expire forgets keys with nothing counted that were idle (all of them,
// with all).
func (c *coalescer) expire(now time.Time, all bool) {
	for k, b := range c.buckets {
		if b.count == 0 && (all || now.Sub(b.seen) >= coalesceIdle) {
			delete(c.buckets, k)
		}
	}
}

// pending reports whether a count waits to be written.
func (c *coalescer) pending() bool {
	for _, b := range c.buckets {
		if b.count > 0 {
			return true
		}
	}
	return false
}

// record is the count record of b's window.
func (b *bucket) record() Event {
	ev := b.first
	ev.Context.Count, ev.Context.WindowSeconds = b.count, coalesceWindow.Seconds()
	details := map[string]string{}
	if b.overflow {
		ev.Reason = fmt.Sprintf("%d more refusals of this run within %s, past the %d a second written in full; "+
			"their subjects, up to %d: %s", b.count, coalesceWindow, maxFullPerSecond, maxOverflowNames, strings.Join(b.names, " "))
	} else {
		ev.Reason = fmt.Sprintf("%d more identical refusals within %s (the first in full at seq %d): %s",
			b.count, coalesceWindow, b.first.Seq, b.first.Reason)
		maps.Copy(details, b.first.Context.Details)
		delete(details, "client")
		details["coalescedFrom"] = strconv.FormatUint(b.first.Seq, 10)
	}
	ev.Context.Details = details
	ev.Seq, ev.Hash, ev.Prev, ev.TS = 0, "", "", time.Time{}
	return ev
}
