package egress

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// cacheTargets are targets on every path of Check, for the tasks of
// openConfig and seedConfig, in several spellings.
func cacheTargets(t *testing.T) []Target {
	var out []Target
	hosts := append(append([]string{}, metadataSpellings...),
		"example.com", "EXAMPLE.com.", "www.example.com", "bücher.de", "search.example-corp.net",
		"api.search.example-corp.net", "93.184.216.34", "10.0.0.1", "127.0.0.1", "::1",
		"64:ff9b::7f00:1", "2002:a00:1::", "fd00::1", "2606:2800:220:1::1", "0x7f.1")
	for _, h := range hosts {
		for _, port := range []uint16{0, 80, 443} {
			if tg, err := ParseTarget(h, port); err == nil {
				out = append(out, tg)
			}
		}
	}
	if len(out) < 100 {
		t.Fatalf("only %d targets", len(out))
	}
	return append(out, Target{})
}

// TestReasonCacheAgrees: every decision is the same with the reason cache
// as without it, the first time and when repeated.
func TestReasonCacheAgrees(t *testing.T) {
	for _, cfg := range []Config{openConfig(), seedConfig()} {
		g := mustCompile(t, cfg)
		plain := *g
		plain.reasons = nil
		targets := cacheTargets(t)
		for _, task := range []string{"open", "wildcard", "narrow", "web_search", "nope", `we"ird`} {
			for _, tg := range targets {
				want := plain.Check(task, tg)
				for i := range 2 {
					if got := g.Check(task, tg); got != want {
						t.Errorf("%s %+v (pass %d): cached %+v, uncached %+v", task, tg, i, got, want)
					}
				}
				answer := []netip.Addr{netip.MustParseAddr("93.184.216.34")}
				wantR, _ := plain.CheckResolved(task, tg, answer)
				if gotR, _ := g.CheckResolved(task, tg, answer); gotR != wantR {
					t.Errorf("%s %+v resolved: cached %+v, uncached %+v", task, tg, gotR, wantR)
				}
			}
		}
	}
}

// TestReasonCacheBounded: endless new hosts never grow the cache past its
// bound, and decisions stay right while its entries are replaced.
func TestReasonCacheBounded(t *testing.T) {
	g := mustCompile(t, openConfig())
	for i := range 6*reasonSets + 7 {
		name := fmt.Sprintf("h%d.example.com", i)
		for range 2 { // kept from the second miss
			d := g.Check("wildcard", Target{Name: name, Port: 443})
			want := `task "wildcard": host "` + name + `:443" allowed by allowlist entry "*"`
			if !d.Allowed() || d.Reason != want {
				t.Fatalf("%s: %+v", name, d)
			}
		}
	}
	if n := g.reasons.len(); n > 2*reasonSets || n < reasonSets {
		t.Fatalf("cache holds %d reasons, want between %d and its bound %d", n, reasonSets, 2*reasonSets)
	}
	d := g.Check("wildcard", Target{Addr: netip.MustParseAddr("169.254.169.254"), Port: 80})
	wantBlocked(t, "after refills", d)
}

// TestReasonCacheKeepsNoCallerMemory: the cache's keys hold the task and
// the name inside the reason they key, or copies of them, never the
// caller's strings (which may be slices of a request buffer).
func TestReasonCacheKeepsNoCallerMemory(t *testing.T) {
	g := mustCompile(t, openConfig())
	line := []byte("CONNECT www.example.com:443 HTTP/1.1")
	name := unsafe.String(&line[8], len("www.example.com"))
	task := string([]byte("wildcard"))
	odd := string([]byte(`wild"card`))
	for range 2 { // kept from the second miss
		g.Check(task, Target{Name: name, Port: 443})
		g.Check(odd, Target{Name: name, Port: 443})
	}
	inside := func(s, outer string) bool {
		p, o := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(outer)))
		return p >= o && p+uintptr(len(s)) <= o+uintptr(len(outer))
	}
	entries := func() []*cachedReason {
		var out []*cachedReason
		for i := range g.reasons.slots {
			if e := g.reasons.slots[i].Load(); e != nil {
				out = append(out, e)
			}
		}
		return out
	}
	if n := len(entries()); n != 2 {
		t.Fatalf("cache holds %d reasons, want 2", n)
	}
	for _, e := range entries() {
		k, reason := e.key, e.reason
		if inside(k.t.Name, unsafe.String(&line[0], len(line))) {
			t.Errorf("key name %q points into the caller's buffer", k.t.Name)
		}
		if unsafe.StringData(k.task) == unsafe.StringData(task) || unsafe.StringData(k.task) == unsafe.StringData(odd) {
			t.Errorf("key task %q is the caller's string", k.task)
		}
		if k.task == task && (!inside(k.task, reason) || !inside(k.t.Name, reason)) {
			t.Errorf("key %q %q not taken from its reason %q", k.task, k.t.Name, reason)
		}
	}
	line[8] = 'W' // the caller reuses its buffer: the cache must not see it
	for _, e := range entries() {
		if strings.HasPrefix(e.key.t.Name, "W") {
			t.Errorf("key name changed with the caller's buffer: %q", e.key.t.Name)
		}
	}
}

// TestReasonCacheConcurrent fills, empties and reads the cache from many
// goroutines (meaningful under -race, as CI runs it).
func TestReasonCacheConcurrent(t *testing.T) {
	g := mustCompile(t, openConfig())
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 4 * reasonSets {
				name := fmt.Sprintf("h%d.example.com", (i*7919+j)%(6*reasonSets))
				d := g.Check("wildcard", Target{Name: name, Port: 443})
				if !d.Allowed() || !strings.Contains(d.Reason, `"`+name+`:443"`) {
					t.Errorf("%s: %+v", name, d)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestReasonCacheMatchesWholeKey: an entry found in a key's set is used
// only when its task, its whole target and its path are the key's
// (entries of other keys share sets).
func TestReasonCacheMatchesWholeKey(t *testing.T) {
	c := newReasonCache()
	tg := Target{Name: "www.example.com", Port: 443}
	for _, other := range []reasonKey{
		{"other", tg, pathAllowed},
		{"t", Target{Name: "www.example.com", Port: 80}, pathAllowed},
		{"t", Target{Name: "www.example.org", Port: 443}, pathAllowed},
		{"t", Target{Addr: netip.MustParseAddr("93.184.216.34"), Port: 443}, pathAllowed},
		{"t", tg, pathHostOwn},
	} {
		s := c.set(c.hash("t", tg))
		s[0].Store(&cachedReason{key: other, reason: "wrong"})
		s[1].Store(&cachedReason{key: other, reason: "wrong"})
		if r, _, ok := c.get("t", tg, pathAllowed); ok {
			t.Errorf("get found %q, cached for %+v", r, other)
		}
	}
}

// TestReasonCacheAdmitsOnSecondMiss: a key is cached the second time in a
// row its set misses it, not the first; a miss of another key in between
// starts over.
func TestReasonCacheAdmitsOnSecondMiss(t *testing.T) {
	c := newReasonCache()
	tg := Target{Name: "www.example.com", Port: 443}
	miss := func() uint64 {
		t.Helper()
		r, h, ok := c.get("t", tg, pathAllowed)
		if ok {
			t.Fatalf("hit %q, want a miss", r)
		}
		return h
	}
	c.add(miss(), "t", tg, pathAllowed, "r1")
	h := miss()                       // the first miss kept nothing
	c.seen[h%reasonSets].Store(h + 1) // another key of the set missed since
	c.add(h, "t", tg, pathAllowed, "r2")
	c.add(miss(), "t", tg, pathAllowed, "r3") // second miss in a row: kept
	if r, _, ok := c.get("t", tg, pathAllowed); !ok || r != "r3" {
		t.Errorf("after two misses in a row: %q %v, want r3", r, ok)
	}
}
