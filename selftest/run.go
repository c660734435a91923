package selftest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"
)

// Options configure a battery run. The zero value runs every family.
type Options struct {
	// Families limits the battery to these families; empty means all.
	Families []Family
	// AuditPath keeps the battery's audit stream in this file; "" writes
	// it to a temporary file that is deleted afterwards.
	AuditPath string
	// Parallel is how many attempts run at once; 0 means 3.
	Parallel int
	// Timeout is the battery's own deadline for one run, after which an
	// attempt that no cap stopped is an escape; 0 means 60s.
	Timeout time.Duration
	// OnResult, when not nil, is called with each result as it is
	// judged (from several goroutines, one call at a time).
	OnResult func(Result)
}

// attempts returns the battery, limited to families (all when empty).
func attempts(families []Family) ([]attempt, error) {
	for _, f := range families {
		if !f.Valid() {
			return nil, fmt.Errorf("selftest: unknown family %q (want one of %v)", f, Families)
		}
	}
	all := familiesFor(runtime.GOOS)
	var out []attempt
	for _, fam := range all {
		for _, a := range fam {
			if len(families) == 0 || slices.Contains(families, a.family) {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// familiesFor is the battery of system goos, family by family: macOS's
// (mac.go), else Linux's.
func familiesFor(goos string) [][]attempt {
	if goos == "darwin" {
		return macFamilies()
	}
	return [][]attempt{commandAttempts(), networkAttempts(), metadataAttempts(), filesystemAttempts(),
		privilegeAttempts(), resourceAttempts(), persistenceAttempts()}
}

// Count is the number of attempts in the battery, per family.
func Count() map[Family]int {
	all, _ := attempts(nil)
	n := map[Family]int{}
	for _, a := range all {
		n[a.family]++
	}
	return n
}

// runWith bounds ctx for one run.
func runWith(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		d = 60 * time.Second
	}
	return context.WithTimeout(ctx, d)
}
