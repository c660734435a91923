package doctor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// mac returns the probes of a Mac whose Seatbelt runs airlock's profiles.
func mac(euid int) Probes {
	return Probes{OS: "darwin", Arch: "arm64", Euid: euid, Kernel: "macOS 14.5 (Darwin 23.5.0)",
		Seatbelt: func(context.Context) error { return nil },
		NoFile:   func() (uint64, uint64, error) { return 256, 10240, nil }}
}

// TestDarwinControls: every requirement is reported on a Mac, in
// package seatbelt's terms, and a policy's require is met only by what
// the Mac holds as Linux does.
func TestDarwinControls(t *testing.T) {
	var names []string
	for _, c := range seatbelt.Controls() {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, RequirementNames()) {
		t.Fatalf("seatbelt.Controls() names %v, want RequirementNames() %v", names, RequirementNames())
	}
	r := CheckWith(context.Background(), mac(501))
	if r.Host.Kernel != "macOS 14.5 (Darwin 23.5.0)" || r.Host.OS != "darwin" {
		t.Errorf("host %+v", r.Host)
	}
	for _, c := range []expect{
		{name: RequireEgressProxy, strength: Strong, detail: []string{"cannot connect elsewhere"}},
		{name: RequireOpenFiles, strength: Strong, detail: []string{"above 10240 cannot be granted"}},
		{name: RequirePrivileges, strength: Weak, detail: []string{"runs as the caller"}},
		{name: RequireNoNewPrivs, strength: Weak, detail: []string{"set-id program"}},
		{name: RequireCgroupMemory, strength: Weak, detail: []string{"footprints every 100 ms", "not bounded"}},
		{name: RequireCgroupPids, strength: Weak, detail: []string{"all the user's processes", "threads are not counted"}},
		{name: RequireCgroupCPU, strength: Weak},
		{name: RequireCgroup, strength: Weak, detail: []string{"escapes the kill"}},
		{name: RequirePIDNS, strength: Missing},
		{name: RequireNetNS, strength: Missing, detail: []string{"only the proxy's loopback port"}},
		{name: RequireMountNS, strength: Missing},
		{name: RequireSeccomp, strength: Missing},
		{name: RequireLandlock, strength: Missing},
		{name: RequireProcFS, strength: Missing},
	} {
		check(t, r, c)
	}
	if c, _ := r.Control(RequirePrivileges); !strings.Contains(c.Mechanism, "uid 501") {
		t.Errorf("privileges: %q", c.Mechanism)
	}
	if u := Satisfies(r, []string{RequireEgressProxy, RequireOpenFiles}); u != nil {
		t.Errorf("egress-proxy and open-files unmet on a Mac: %v", u)
	}
	for _, name := range []string{RequireNetNS, RequireCgroupMemory, RequirePrivileges, RequireSeccomp} {
		if u := Satisfies(r, []string{name}); len(u) != 1 {
			t.Errorf("require %s met on a Mac", name)
		}
	}
}

func TestDarwinWithoutSeatbelt(t *testing.T) {
	p := mac(501)
	p.Seatbelt = func(context.Context) error { return errors.New("exit status 65: sandbox-exec: invalid profile") }
	r := CheckWith(context.Background(), p)
	for _, c := range r.Controls {
		if c.Strength != Missing || !strings.Contains(c.Detail, "invalid profile") || c.Fix == "" {
			t.Errorf("%s without Seatbelt: %s, %q, fix %q", c.Name, c.Strength, c.Detail, c.Fix)
		}
	}
}

func TestDarwinAsRoot(t *testing.T) {
	check(t, CheckWith(context.Background(), mac(0)), expect{name: RequirePrivileges, strength: Missing, detail: []string{"refuses to run them as root"}})
}
