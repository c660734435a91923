package egress

import (
	"encoding/binary"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// reasonSets is the number of two-entry sets in a gate's reason cache. A
// sandbox reaches a few hosts over and over; a client that asks for
// endless new hosts only replaces entries, and costs about what it would
// without the cache. At about 250 bytes an entry, a full cache holds half
// a megabyte.
const reasonSets = 1024

// reasonKey is what a cached reason depends on. A gate is immutable, so
// the entry that decides and the address that is blocked or refused are
// functions of the task, the normalised target and the path the decision
// took; so is the reason written from them. The path is in the key
// because it may change for the same target: whether an address is the
// host's own depends on the host's interfaces.
type reasonKey struct {
	task string
	t    Target
	path path
}

// cachedReason is one entry; it is never changed once stored.
type cachedReason struct {
	key    reasonKey
	reason string
}

// reasonCache keeps the reasons of recent decisions, so that a decision a
// sandbox repeats returns a reason already written and allocates nothing.
// Its reasons are the ones the gate writes: the same fixed sentences,
// naming task, host and entry (a test checks that every path gives the
// same decision with and without it). A reason is kept from the second
// time its key is missed: a destination asked for once (a crawler, a
// scan) costs no cache entry and evicts nothing.
//
// Hand-written rather than a library: it is a two-way set-associative
// table of atomic pointers to immutable entries, so a lookup is a hash,
// two loads and a comparison, with no lock for concurrent decisions to
// contend on. sync.Map would box each key into an interface (an
// allocation per lookup, the thing this saves), and an LRU package brings
// a lock and an eviction order this does not need.
type reasonCache struct {
	seed  maphash.Seed
	slots [2 * reasonSets]atomic.Pointer[cachedReason]
	seen  [reasonSets]atomic.Uint64 // per set, the hash of the last key missed
}

func newReasonCache() *reasonCache {
	return &reasonCache{seed: maphash.MakeSeed()}
}

// hash spreads keys over the sets: the strings through maphash, the
// target's other fields mixed by multiplication (the constants are those
// of splitmix64 and murmur3's finaliser).
func (c *reasonCache) hash(task string, t Target) uint64 {
	b := t.Addr.As16()
	h := maphash.String(c.seed, task) ^ maphash.String(c.seed, t.Name)*0x9e3779b97f4a7c15
	h ^= binary.LittleEndian.Uint64(b[:8]) * 0xff51afd7ed558ccd
	h ^= (binary.LittleEndian.Uint64(b[8:]) ^ uint64(t.Port)<<48 ^ uint64(t.Addr.BitLen())) * 0xc4ceb9fe1a85ec53
	return h ^ h>>29
}

// set returns the two slots of the set for hash h.
func (c *reasonCache) set(h uint64) []atomic.Pointer[cachedReason] {
	i := 2 * (h % reasonSets)
	return c.slots[i : i+2 : i+2]
}

// get returns the reason cached for task and t, or, on a miss, the key's
// hash for add.
func (c *reasonCache) get(task string, t Target, p path) (reason string, h uint64, ok bool) {
	h = c.hash(task, t)
	s := c.set(h)
	for i := range s {
		if e := s[i].Load(); e != nil && e.key.t == t && e.key.path == p && e.key.task == task {
			return e.reason, h, true
		}
	}
	return "", h, false
}

// add caches reason, written by the gate for task and t after get missed
// with hash h, if the same key was the last one missed in its set; the
// entry goes to an empty slot of the set, or in place of one of the two
// at random.
func (c *reasonCache) add(h uint64, task string, t Target, p path, reason string) {
	if c.seen[h%reasonSets].Swap(h) != h {
		return // first miss: remember it, keep nothing yet
	}
	e := &cachedReason{key: ownedKey(task, t, reason), reason: reason}
	e.key.path = p
	s := c.set(h)
	for i := range s {
		if s[i].CompareAndSwap(nil, e) {
			return
		}
	}
	s[rand.IntN(len(s))].Store(e)
}

// len counts the cached reasons (for tests).
func (c *reasonCache) len() int {
	n := 0
	for i := range c.slots {
		if c.slots[i].Load() != nil {
			n++
		}
	}
	return n
}

// ownedKey returns the key for task and t with strings the cache may keep:
// the task and the name as they appear inside reason (every cached reason
// starts `task "T": host "NAME`, and a canonical name is never escaped), or
// copies when they do not. The caller's strings may be slices of a larger
// buffer (a request line), which the cache must not keep alive.
func ownedKey(task string, t Target, reason string) reasonKey {
	const taskAt = len(`task "`)
	nameAt := taskAt + len(task) + len(`": host "`)
	if rt, ok := sliceAt(reason, taskAt, task); ok {
		task = rt
	} else {
		task = strings.Clone(task)
		nameAt = -1 // the task was escaped: look no further
	}
	if t.Name != "" {
		if n, ok := sliceAt(reason, nameAt, t.Name); ok {
			t.Name = n
		} else {
			t.Name = strings.Clone(t.Name)
		}
	}
	return reasonKey{task: task, t: t}
}

// sliceAt returns s[at:at+len(want)] when it equals want.
func sliceAt(s string, at int, want string) (string, bool) {
	if at < 0 || at+len(want) > len(s) || s[at:at+len(want)] != want {
		return "", false
	}
	return s[at : at+len(want)], true
}
