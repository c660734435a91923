package policy

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/internal/gitignore"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// maxExclude is how many patterns changes.exclude holds at most.
const maxExclude = 256

// ChangesExclude is the changes section's exclude patterns (none when
// the policy has no changes section).
func (p *Policy) ChangesExclude() []string {
	if p.Changes == nil {
		return nil
	}
	return p.Changes.Exclude
}

// checkChanges refuses a pattern that would not do what it seems to
// (gitignore.Compile), a pattern named twice, and more than maxExclude.
func checkChanges(p *Policy) []*Error {
	var errs []*Error
	ex := p.ChangesExclude()
	if len(ex) > maxExclude {
		errs = append(errs, strict.Problem("changes.exclude", fmt.Sprintf("%d patterns, more than %d", len(ex), maxExclude), "exclude a directory rather than each file in it"))
	}
	seen := map[string]bool{}
	for i, e := range ex {
		at := strict.Index("changes.exclude", i)
		if seen[e] {
			errs = append(errs, strict.Problem(at, fmt.Sprintf("pattern %q is named twice", e), ""))
		}
		seen[e] = true
		if _, err := gitignore.Compile(e); err != nil {
			errs = append(errs, strict.Problem(at, fmt.Sprintf("pattern %q: %v", e, err), "the syntax is .gitignore's: see docs/changes.md"))
		}
	}
	return errs
}
