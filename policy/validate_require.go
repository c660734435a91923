package policy

import (
	"fmt"
	"slices"
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

// checkWeakerModes refuses a weaker mode nobody knows, one named twice,
// and one that gives up a mechanism the policy requires.
func checkWeakerModes(p *Policy) []*Error {
	var errs []*Error
	seen := map[string]bool{}
	for i, w := range p.WeakerModes {
		field := fmt.Sprintf("weakerModes[%d]", i)
		switch {
		case !slices.Contains(doctor.WeakerModeNames(), w):
			errs = append(errs, strict.Problem(field, fmt.Sprintf("unknown weaker mode %q", w),
				"known: "+strings.Join(doctor.WeakerModeNames(), ", ")))
		case seen[w]:
			errs = append(errs, strict.Problem(field, fmt.Sprintf("weaker mode %q is named twice", w), ""))
		}
		seen[w] = true
		for _, r := range givenUp[w] {
			if slices.Contains(p.Require, r) {
				errs = append(errs, strict.Problem(field, fmt.Sprintf("weaker mode %q gives up %q, which require names", w, r),
					"drop one of the two"))
			}
		}
	}
	return errs
}

// givenUp are the require names a weaker mode runs without.
var givenUp = map[string][]string{
	doctor.WeakerEgressUnenforced: {doctor.RequireNetNS, doctor.RequireLandlockNet},
	doctor.WeakerTrustd:           {doctor.RequireEgressProxy},
}
