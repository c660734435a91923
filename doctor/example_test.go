package doctor_test

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/doctor"
)

// A policy's "require" list is met only by strong controls: here the
// memory cap would fall back to an rlimit per process, so a policy that
// requires cgroup-memory must not run.
func ExampleSatisfies() {
	r := doctor.Report{Controls: []doctor.Control{
		{Name: doctor.RequireSeccomp, Mechanism: "seccomp filter", Strength: doctor.Strong},
		{Name: doctor.RequireCgroupMemory, Mechanism: "RLIMIT_DATA per process (fallback)", Strength: doctor.Weak,
			Detail: "no cgroup is delegated to this user"},
	}}
	for _, u := range doctor.Satisfies(r, []string{"seccomp", "cgroup-memory"}) {
		fmt.Println(u.Reason)
	}
	// Output:
	// policy requires cgroup-memory; this host enforces it only weakly, by RLIMIT_DATA per process (fallback): no cgroup is delegated to this user
}
