package runbook

import "testing"

// TestInSandboxGroup: a process is in the sandbox's group when each of
// its hierarchies is the sandbox's or one step group below it, and in no
// other case.
func TestInSandboxGroup(t *testing.T) {
	own := "8:pids:/airlock-sandbox-x\n4:memory:/p/airlock-sandbox-x\n0::/airlock-sandbox-x\n"
	for cg, want := range map[string]bool{
		own: true,
		"8:pids:/airlock-sandbox-x/airlock-step-12\n4:memory:/p/airlock-sandbox-x/airlock-step-12\n0::/airlock-sandbox-x\n": true,
		"8:pids:/airlock-sandbox-x/airlock-step-1\n4:memory:/p/airlock-sandbox-x\n0::/airlock-sandbox-x\n":                  true,
		"8:pids:/\n4:memory:/p/airlock-sandbox-x\n0::/airlock-sandbox-x\n":                                                  false,
		"8:pids:/airlock-sandbox-x/other\n4:memory:/p/airlock-sandbox-x\n0::/airlock-sandbox-x\n":                           false,
		"8:pids:/airlock-sandbox-x/airlock-step-\n4:memory:/p/airlock-sandbox-x\n0::/airlock-sandbox-x\n":                   false,
		"8:pids:/airlock-sandbox-x/airlock-step-1/airlock-step-2\n4:memory:/p/airlock-sandbox-x\n0::/airlock-sandbox-x\n":   false,
		"8:pids:/airlock-sandbox-xy\n4:memory:/p/airlock-sandbox-x\n0::/airlock-sandbox-x\n":                                false,
		"8:pids:/airlock-sandbox-x\n4:memory:/p/airlock-sandbox-x\n":                                                        false,
	} {
		if got := inSandboxGroup([]byte(cg), []byte(own)); got != want {
			t.Errorf("inSandboxGroup(%q) = %v, want %v", cg, got, want)
		}
	}
}
