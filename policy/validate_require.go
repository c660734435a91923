package policy

import (
	"fmt"
	"strings"

	"github.com/airlock-sandbox/airlock/doctor"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// checkRequire refuses a require name nobody knows: a typo must never drop
// a requirement silently.
func checkRequire(p *Policy) []*Error {
	var errs []*Error
	for i, r := range p.Require {
		if !doctor.IsRequirement(r) {
			hint := "known (the controls airlock doctor shows): " + strings.Join(doctor.RequirementNames(), ", ")
			if best := strict.Closest(r, doctor.RequirementNames()); best != "" {
				hint = fmt.Sprintf("did you mean %q? (%s)", best, hint)
			}
			errs = append(errs, strict.Problem(fmt.Sprintf("require[%d]", i), fmt.Sprintf("unknown mechanism %q", r), hint))
		}
	}
	return errs
}
