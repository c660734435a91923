package k8s

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// fakeDiscovery is the least of an API server that kubectl apply
// --dry-run=client needs: the discovery documents for the kinds the
// export writes (as if agent-sandbox's and Cilium's CRDs were installed)
// and a 404 for every object, so each is "created (dry run)". It records
// any request that is not a GET.
func fakeDiscovery(t *testing.T) *httptest.Server {
	resources := map[string][][3]string{ // group/version: name, kind, namespaced
		"v1":                                 {{"configmaps", "ConfigMap", "true"}, {"pods", "Pod", "true"}},
		"networking.k8s.io/v1":               {{"networkpolicies", "NetworkPolicy", "true"}},
		"extensions.agents.x-k8s.io/v1beta1": {{"sandboxtemplates", "SandboxTemplate", "true"}, {"sandboxwarmpools", "SandboxWarmPool", "true"}},
		"cilium.io/v2":                       {{"ciliumnetworkpolicies", "CiliumNetworkPolicy", "true"}},
	}
	list := func(gv string) map[string]any {
		var rs []map[string]any
		for _, r := range resources[gv] {
			rs = append(rs, map[string]any{"name": r[0], "singularName": "", "kind": r[1], "namespaced": r[2] == "true",
				"verbs": []string{"get", "list", "create", "patch"}})
		}
		return map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": rs}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("kubectl sent %s %s: a client dry run must change nothing", r.Method, r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		var body any
		switch p := r.URL.Path; {
		case p == "/api":
			body = map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
				"serverAddressByClientCIDRs": []map[string]string{{"clientCIDR": "0.0.0.0/0", "serverAddress": r.Host}}}
		case p == "/apis":
			var groups []map[string]any
			for gv := range resources {
				g, v, ok := strings.Cut(gv, "/")
				if !ok {
					continue
				}
				ver := map[string]string{"groupVersion": gv, "version": v}
				groups = append(groups, map[string]any{"name": g, "versions": []any{ver}, "preferredVersion": ver})
			}
			body = map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
		case p == "/api/v1":
			body = list("v1")
		case strings.HasPrefix(p, "/apis/") && strings.Count(p, "/") == 3:
			body = list(strings.TrimPrefix(p, "/apis/"))
		default:
			w.WriteHeader(http.StatusNotFound)
			body = map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
		}
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestKubectlDryRun feeds every kind of export to kubectl apply
// --dry-run=client against fakeDiscovery on loopback, with validation
// off (no OpenAPI document is served): kubectl parses the stream, maps
// each apiVersion and kind to a resource and reports each object created
// without sending it. No cluster is involved (docs/export.md).
func TestKubectlDryRun(t *testing.T) {
	testutil.RequireCommands(t, "kubectl")
	srv := fakeDiscovery(t)
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{}, {Cilium: true}, {Kind: KindSandboxTemplate, WarmPool: 2, Cilium: true}} {
		b, err := Export(testTask(t, "docs"), o)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "--server", srv.URL, "--namespace", "default",
			"apply", "--dry-run=client", "--validate=false", "-o", "name", "-f", "-")
		cmd.Stdin = bytes.NewReader(b)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%+v: kubectl: %v\n%s", o, err, out)
		}
		n := strings.Count(string(b), "\n---\n")
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != n {
			t.Errorf("%+v: kubectl took %d objects of %d:\n%s", o, len(lines), n, out)
		}
		for _, l := range lines {
			if !strings.Contains(l, "/airlock-run-tests-") {
				t.Errorf("%+v: kubectl said %q", o, l)
			}
		}
	}
}
