package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestHolesRefused opens each test hole in turn and checks that Start
// with the start-up probes fails with ErrProbe naming exactly the probes
// that watch that hole (every other probe passed), that the target never
// ran, and that nothing of the sandbox is left on the host.
func TestHolesRefused(t *testing.T) {
	testutil.RequireRoot(t)
	file, addr := canaries(t)
	for _, h := range testutil.SandboxHoles {
		t.Run(h.Name, func(t *testing.T) {
			testutil.OpenSandboxHole(t, h.Name)
			var out bytes.Buffer
			cfg := shellConfig("echo ran")
			cfg.ID = "hole-" + h.Name + "-" + itoa(os.Getpid())
			cfg.Stdout, cfg.Stderr = &out, &out
			cfg.Probes = &ProbeRequest{CanaryFile: file, CanaryAddr: addr}
			s, err := Start(context.Background(), cfg)
			if err == nil {
				s.Kill()
				t.Fatal("Start passed its probes with the hole open")
			}
			if !errors.Is(err, ErrProbe) {
				t.Fatalf("Start: %v, want ErrProbe", err)
			}
			t.Log(err)
			failed := failedProbes(t, err)
			for _, p := range h.Probes {
				if _, ok := failed[p]; !ok {
					t.Errorf("probe %s did not fail: %v", p, err)
				}
			}
			for p, detail := range failed {
				if !slices.Contains(h.Probes, p) && !slices.Contains(h.Maybe, p) {
					t.Errorf("probe %s failed too (%s): the hole is not the only one", p, detail)
				}
			}
			if out.Len() != 0 {
				t.Errorf("the target ran: %q", out.String())
			}
			testutil.CheckNoSandboxLeft(t, cfg.ID)
		})
	}
}

// failedProbes reads the failed probes' names and details from Start's
// ErrProbe error ("...: start-up probe failed: NAME: DETAIL; NAME: ...").
func failedProbes(t *testing.T, err error) map[string]string {
	t.Helper()
	_, list, ok := strings.Cut(err.Error(), ErrProbe.Error()+": ")
	if !ok {
		t.Fatalf("error %q does not list the failed probes", err)
	}
	out := map[string]string{}
	for _, part := range strings.Split(list, "; ") {
		name, detail, _ := strings.Cut(part, ": ")
		out[name] = detail
	}
	return out
}

// TestHoleNames keeps the sandbox's holes and the test helpers' list
// equal, and refuses an unknown hole before anything starts.
func TestHoleNames(t *testing.T) {
	if holeEnv != testutil.SandboxHoleEnv {
		t.Fatalf("holeEnv %q, testutil %q", holeEnv, testutil.SandboxHoleEnv)
	}
	var names []hole
	for _, h := range testutil.SandboxHoles {
		names = append(names, hole(h.Name))
	}
	if !slices.Equal(names, holes) {
		t.Errorf("testutil lists %v, the sandbox knows %v", names, holes)
	}
	testutil.OpenSandboxHole(t, "seccomp-typo")
	_, err := Start(context.Background(), shellConfig("true"))
	if err == nil || !strings.Contains(err.Error(), `test hole "seccomp-typo" (AIRLOCK_TEST_HOLE): unknown`) {
		t.Fatalf("Start with an unknown hole: %v", err)
	}
}
