package idmap

import (
	"errors"
	"strings"
	"testing"
)

func TestSubRange(t *testing.T) {
	file := []byte("# comment\nalice:100000:65536\n1000:200000:65536\nbob:300000:0\nbad line\ncarol:x:1\ndave:4294967295:2\n")
	for _, tc := range []struct {
		name, uid string
		start     uint32
		ok        bool
	}{
		{"alice", "1001", 100000, true},
		{"someone", "1000", 200000, true},
		{"bob", "1002", 0, false},
		{"carol", "1003", 0, false},
		{"dave", "1004", 0, false},
		{"nobody", "65534", 0, false},
	} {
		start, ok := subRange(file, tc.name, tc.uid)
		if start != tc.start || ok != tc.ok {
			t.Errorf("%s (%s): %d %v, want %d %v", tc.name, tc.uid, start, ok, tc.start, tc.ok)
		}
	}
}

func TestRefusal(t *testing.T) {
	if err := (Groups{}).Refusal(); err != nil {
		t.Errorf("no groups: %v", err)
	}
	if err := (Groups{Extra: []int{42}, NewGIDMap: "/usr/bin/newgidmap", Range: true}).Refusal(); err != nil {
		t.Errorf("droppable groups: %v", err)
	}
	err := Groups{Extra: []int{42}, User: "alice"}.Refusal()
	for _, want := range []string{"[42]", "newgidmap is not installed", "gives alice no subordinate gid range", "setpriv --clear-groups"} {
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrGroups) {
			t.Errorf("refusal %v lacks %q", err, want)
		}
	}
}

func TestMapArgs(t *testing.T) {
	g := Groups{SubGID: 100000}
	if got := strings.Join(g.MapArgs(7, 65534), " "); !strings.HasPrefix(got, "7 65534 ") || !strings.HasSuffix(got, " 1 0 100000 1") {
		t.Errorf("MapArgs = %q", got)
	}
	if got := g.MapArgs(7, 0); got[4] != "1" {
		t.Errorf("MapArgs with gid 0 inside = %q", got)
	}
}

// FuzzSubRange: any file parses without panicking, and a range it finds
// fits in the gid space.
func FuzzSubRange(f *testing.F) {
	f.Add([]byte("alice:100000:65536\n"), "alice")
	f.Add([]byte("alice:4294967294:1\nalice::\n:::\n"), "alice")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		start, ok := subRange(b, name, "1000")
		if !ok && start != 0 {
			t.Fatalf("no range but start %d", start)
		}
	})
}
