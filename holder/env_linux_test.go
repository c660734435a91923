package holder

import (
	"slices"
	"testing"
)

// TestHolderEnvCredentials: the holder's environment keeps, of the
// caller's, where the user's files are and the variables its policy's
// credentials are read from (a session's proxy reads them there, as
// airlock run's does), and nothing else.
func TestHolderEnvCredentials(t *testing.T) {
	t.Setenv("AIRLOCK_TEST_GH_TOKEN", "gh-value")
	t.Setenv("AIRLOCK_TEST_OTHER_SECRET", "other-value")
	t.Setenv("HOME", "/home/someone")
	pol := []byte(`{"toolScopes": {}, "egress": {"taskAllowlist": {"t": [{"host": "api.example.com", "inspect": true}]},
  "credentials": [{"name": "gh", "host": "api.example.com", "scheme": "bearer", "fromEnv": "AIRLOCK_TEST_GH_TOKEN"}]}}`)
	env := holderEnv(Config{PolicyName: "p.json", Policy: pol})
	for _, want := range []string{"AIRLOCK_TEST_GH_TOKEN=gh-value", "HOME=/home/someone"} {
		if !slices.Contains(env, want) {
			t.Errorf("the holder's environment lacks %s: %q", want, env)
		}
	}
	if slices.Contains(env, "AIRLOCK_TEST_OTHER_SECRET=other-value") {
		t.Errorf("the holder's environment has a variable no credential names: %q", env)
	}
}
