package policy_test

import (
	"slices"
	"testing"

	"github.com/airlock-sandbox/airlock/doctor"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestRequireNamesAgree keeps the names a policy may require (doctor's)
// equal to the names the sandbox enforces.
func TestRequireNamesAgree(t *testing.T) {
	a, b := slices.Sorted(slices.Values(doctor.RequirementNames())), slices.Sorted(slices.Values(sandbox.RequireNames()))
	if !slices.Equal(a, b) {
		t.Fatalf("doctor knows %q\nsandbox knows %q", a, b)
	}
	if a, b := doctor.WeakerModeNames(), sandbox.WeakerModes(); !slices.Equal(a, b) {
		t.Fatalf("doctor knows the weaker modes %q, sandbox %q", a, b)
	}
}
