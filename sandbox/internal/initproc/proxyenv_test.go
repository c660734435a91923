package initproc

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestProxyEnvAuth puts the proxy's user and token in every proxy
// variable's URL, as net/url (and so curl's and Python's parsers) read
// them back, and replaces what the caller passed.
func TestProxyEnvAuth(t *testing.T) {
	env := ProxyEnv([]string{"HTTP_PROXY=http://elsewhere:1", "all_proxy=x", "A=b"}, 8080, "airlock:tok-_9")
	if !slices.Contains(env, "A=b") || slices.Contains(env, "HTTP_PROXY=http://elsewhere:1") || slices.Contains(env, "all_proxy=x") {
		t.Fatalf("env = %q", env)
	}
	n := 0
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if !IsProxyVar(k) || strings.EqualFold(k, "NO_PROXY") {
			continue
		}
		n++
		u, err := url.Parse(v)
		if err != nil {
			t.Fatal(err)
		}
		if pw, _ := u.User.Password(); u.User.Username() != "airlock" || pw != "tok-_9" || u.Host != "127.0.0.1:8080" {
			t.Errorf("%s: user %q, host %q", kv, u.User, u.Host)
		}
	}
	if n != 6 {
		t.Errorf("%d proxy variables, want 6: %q", n, env)
	}
	if plain := ProxyEnv(nil, 8080, ""); !slices.Contains(plain, "HTTP_PROXY=http://127.0.0.1:8080") {
		t.Errorf("without auth: %q", plain)
	}
}
