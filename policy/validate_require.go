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
			errs = append(errs, strict.Problem(fmt.Sprintf("require[%d]", i), fmt.Sprintf("unknown mechanism %q", r),
				"known: "+strings.Join(doctor.RequirementNames(), ", ")))
		}
	}
	return errs
}
