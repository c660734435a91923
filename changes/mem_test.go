package changes

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"testing/fstest"
)

// TestDiffMemory checks that what Diff allocates to rewrite files stays
// within a bound of the limits, whatever their lines: the line diff of
// one 4 MiB file of short lines took 1.7 GiB. What it allocates in all
// (MemStats.TotalAlloc) bounds what it holds at its peak.
func TestDiffMemory(t *testing.T) {
	lim, _ := Limits{}.normalize()
	fill := func(line string, n int) []byte { return bytes.Repeat([]byte(line), n) }
	full := func(line string) []byte { return fill(line, int(lim.FileBytes)/len(line)) }
	for _, tc := range []struct {
		name     string
		files    int
		old, new []byte
	}{
		{"4 MiB of short lines", 1, full("a\n"), full("b\n")},
		{"two such files", 2, full("a\n"), full("b\n")},
		{"empty lines", 1, full("\n"), full("b\n")},
		{"long lines to short ones", 1, full("a line of some length, as in a source file\n"), full("b\n")},
		{"as many lines as are diffed", 1, fill("a\n", lim.DiffLines), fill("b\n", lim.DiffLines)},
		{"added", 1, nil, full("b\n")},
	} {
		o, m := fstest.MapFS{}, fstest.MapFS{}
		for i := range tc.files {
			name := fmt.Sprint("f", i)
			if tc.old != nil {
				o[name] = &fstest.MapFile{Data: tc.old}
			}
			m[name] = &fstest.MapFile{Data: tc.new}
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p, err := Diff(FSTree(o), FSTree(m), Options{})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Complete {
			t.Fatalf("%s: %v", tc.name, p.Incomplete())
		}
		// docs/changes.md: twice the patch, and a few times the files.
		alloc, bound := after.TotalAlloc-before.TotalAlloc, uint64(2*lim.PatchBytes+8*lim.FileBytes)
		if alloc > bound {
			t.Errorf("%s: Diff allocated %d MiB, over %d MiB", tc.name, alloc>>20, bound>>20)
		}
	}
}
