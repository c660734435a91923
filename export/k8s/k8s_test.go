package k8s

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/airlock-sandbox/airlock/export"
	"github.com/airlock-sandbox/airlock/policy"
)

const testDigest = "sha256:015ac325c5f5b60778313e15359890864fd2ce9ed9cc6e3b35e9368526af225b"

const testPolicy = `{
  "toolScopes": {
    "run_tests": {
      "allow": [{"name": "pytest", "command": "pytest", "argPatterns": [["-v"]], "allowExtraArgs": false}],
      "caps": {"memoryMb": 300, "processCount": 40, "diskWriteMb": 50, "cpuSeconds": 20, "wallSeconds": 8.5, "openFiles": 128}
    }
  },
  "egress": {"default": "deny", "taskAllowlist": {"docs": ["docs.example.com:443", "*.pypi.example:443", "203.0.113.0/24:8443", "*:443"]},
    "alwaysBlocked": ["203.0.113.9"]}
}`

func testTask(t *testing.T, task string) *export.Task {
	t.Helper()
	pol, err := policy.Parse("test.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := export.Resolve(pol, export.Request{Tool: "run_tests", Task: task, Image: "registry.example/ci/py@" + testDigest, Command: []string{"pytest", "-v"}})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// docs splits a YAML stream and decodes each document strictly (unknown
// fields refused) into the type its kind names.
func docs(t *testing.T, stream []byte) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, d := range bytes.Split(stream, []byte("\n---\n")) {
		if bytes.HasPrefix(d, []byte("#")) {
			continue
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal(d, &head); err != nil {
			t.Fatal(err)
		}
		var obj any
		switch head.Kind {
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		case "Pod":
			obj = &corev1.Pod{}
		case "NetworkPolicy":
			obj = &networkingv1.NetworkPolicy{}
		case "SandboxTemplate":
			obj = &SandboxTemplate{}
		case "SandboxWarmPool":
			obj = &SandboxWarmPool{}
		case "CiliumNetworkPolicy":
			obj = &CiliumNetworkPolicy{}
		default:
			t.Fatalf("unexpected kind %q", head.Kind)
		}
		if err := yaml.UnmarshalStrict(d, obj); err != nil {
			t.Fatalf("%s does not decode strictly: %v", head.Kind, err)
		}
		out[head.Kind] = obj
	}
	return out
}

// TestPodControls checks each cap and control of the policy against the
// field that carries it in the Pod, strictly decoded into the Kubernetes
// types.
func TestPodControls(t *testing.T) {
	tk := testTask(t, "docs")
	b, err := Export(tk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := docs(t, b)
	pod := d["Pod"].(*corev1.Pod)
	s := pod.Spec
	c := s.Containers[0]
	sc := c.SecurityContext
	q := func(r corev1.ResourceName) string { v := c.Resources.Limits[r]; return v.String() }
	for _, row := range []struct {
		control   string
		got, want any
	}{
		{"memoryMb + airlock's own", q(corev1.ResourceMemory), "364Mi"},
		{"cpuSeconds / wallSeconds", q(corev1.ResourceCPU), "2353m"},
		{"diskWriteMb × 4 emptyDirs + logs", q(corev1.ResourceEphemeralStorage), "264Mi"},
		{"requests = limits", c.Resources.Requests.Memory().String(), "364Mi"},
		{"wallSeconds + margin", *s.ActiveDeadlineSeconds, int64(69)},
		{"user namespace", *s.HostUsers, false},
		{"no service-account token", *s.AutomountServiceAccountToken, false},
		{"no service links", *s.EnableServiceLinks, false},
		{"restart", s.RestartPolicy, corev1.RestartPolicyNever},
		{"pod runAsNonRoot", *s.SecurityContext.RunAsNonRoot, true},
		{"pod runAsUser", *s.SecurityContext.RunAsUser, int64(65534)},
		{"pod seccomp", *s.SecurityContext.SeccompProfile.LocalhostProfile, SeccompProfile},
		{"seccomp type", sc.SeccompProfile.Type, corev1.SeccompProfileTypeLocalhost},
		{"runAsUser", *sc.RunAsUser, int64(65534)},
		{"no privilege escalation", *sc.AllowPrivilegeEscalation, false},
		{"not privileged", *sc.Privileged, false},
		{"read-only root", *sc.ReadOnlyRootFilesystem, true},
		{"drop ALL", sc.Capabilities.Drop, []corev1.Capability{"ALL"}},
		{"image pinned", c.Image, "registry.example/ci/py@" + testDigest},
		{"airlock is the entrypoint, gate and sandbox", strings.Join(c.Command, " "),
			"airlock run --policy /etc/airlock/policy.json --tool run_tests --task docs --workspace /workspace --findings /findings -- pytest -v"},
	} {
		if !equal(row.got, row.want) {
			t.Errorf("%s: %v, want %v", row.control, row.got, row.want)
		}
	}
	for _, v := range s.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit.String() != "50Mi" {
			t.Errorf("emptyDir %s: sizeLimit %s, want 50Mi (diskWriteMb)", v.Name, v.EmptyDir.SizeLimit)
		}
	}
	cm := d["ConfigMap"].(*corev1.ConfigMap)
	back, err := policy.Parse("configmap.json", []byte(cm.Data["policy.json"]))
	if err != nil || back.CapsFor("run_tests") != tk.Caps {
		t.Errorf("the ConfigMap's policy does not load as the exported one: %v", err)
	}

	np := d["NetworkPolicy"].(*networkingv1.NetworkPolicy)
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{"Ingress", "Egress"}) || len(np.Spec.Ingress) != 0 {
		t.Errorf("policy types %v, ingress %v: want both, no ingress", np.Spec.PolicyTypes, np.Spec.Ingress)
	}
	if got := np.Spec.PodSelector.MatchLabels; !equal(got, pod.Labels) {
		t.Errorf("the NetworkPolicy selects %v, the pod has %v", got, pod.Labels)
	}
	e := np.Spec.Egress
	if len(e) != 3 {
		t.Fatalf("egress rules: %d, want DNS, the CIDR, the names", len(e))
	}
	if e[0].To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" || e[0].Ports[0].Port.IntValue() != 53 {
		t.Errorf("rule 0 is not DNS to kube-dns: %+v", e[0])
	}
	if b := e[1].To[0].IPBlock; b.CIDR != "203.0.113.0/24" || !slices.Equal(b.Except, []string{"203.0.113.9/32"}) || e[1].Ports[0].Port.IntValue() != 8443 {
		t.Errorf("rule 1 (the CIDR entry, less the policy's alwaysBlocked): %+v %+v", b, e[1].Ports)
	}
	v4 := e[2].To[0].IPBlock
	if v4.CIDR != "0.0.0.0/0" || !slices.Contains(v4.Except, "169.254.0.0/16") || !slices.Contains(v4.Except, "10.0.0.0/8") ||
		len(e[2].Ports) != 1 || e[2].Ports[0].Port.IntValue() != 443 {
		t.Errorf("rule 2 (the names: public addresses, port 443): %+v %+v", v4, e[2].Ports)
	}
}

func equal(a, b any) bool {
	ya, _ := yaml.Marshal(a)
	yb, _ := yaml.Marshal(b)
	return bytes.Equal(ya, yb)
}

// TestSandboxTemplate checks the agent-sandbox kinds: the template carries
// the same pod and its own managed network policy, the warm pool names it.
func TestSandboxTemplate(t *testing.T) {
	tk := testTask(t, "docs")
	b, err := Export(tk, Options{Kind: KindSandboxTemplate, WarmPool: 3})
	if err != nil {
		t.Fatal(err)
	}
	d := docs(t, b)
	st := d["SandboxTemplate"].(*SandboxTemplate)
	wp := d["SandboxWarmPool"].(*SandboxWarmPool)
	if st.APIVersion != AgentSandboxAPIVersion || wp.APIVersion != AgentSandboxAPIVersion {
		t.Errorf("api versions %s, %s", st.APIVersion, wp.APIVersion)
	}
	if *wp.Spec.Replicas != 3 || wp.Spec.TemplateRef.Name != st.Name {
		t.Errorf("warm pool %+v does not keep 3 of %s", wp.Spec, st.Name)
	}
	if st.Spec.NetworkPolicyManagement != "Managed" || st.Spec.NetworkPolicy == nil || len(st.Spec.NetworkPolicy.Egress) != 3 ||
		len(st.Spec.NetworkPolicy.Ingress) != 0 {
		t.Errorf("template network policy: %s %+v", st.Spec.NetworkPolicyManagement, st.Spec.NetworkPolicy)
	}
	if st.Spec.EnvVarsInjectionPolicy != "Disallowed" || *st.Spec.PodTemplate.Spec.HostUsers {
		t.Error("the template lets claims inject variables, or the pod shares the host's users")
	}
	if _, ok := d["NetworkPolicy"]; ok {
		t.Error("a template export also prints a NetworkPolicy")
	}
	if _, err := Export(tk, Options{WarmPool: 2}); err == nil {
		t.Error("a warm pool for a Pod was accepted")
	}
}

// TestCilium checks the Cilium policy: DNS only for the allowlist's names,
// the names as toFQDNs (*.suffix as a pattern) by port, the CIDR as
// toCIDRSet, and the NetworkPolicy left denying all egress.
func TestCilium(t *testing.T) {
	b, err := Export(testTask(t, "docs"), Options{Cilium: true})
	if err != nil {
		t.Fatal(err)
	}
	d := docs(t, b)
	if e := d["NetworkPolicy"].(*networkingv1.NetworkPolicy).Spec.Egress; len(e) != 0 {
		t.Errorf("with Cilium the NetworkPolicy allows %v", e)
	}
	r := d["CiliumNetworkPolicy"].(*CiliumNetworkPolicy).Spec
	want := []FQDNSelector{{MatchName: "docs.example.com"}, {MatchPattern: "*.pypi.example"}, {MatchPattern: "*"}}
	if len(r.Egress) != 3 {
		t.Fatalf("egress rules %+v", r.Egress)
	}
	if dns := r.Egress[0].ToPorts[0].Rules.DNS; !slices.Equal(dns, want) || r.Egress[0].ToEndpoints[0].MatchLabels["k8s:k8s-app"] != "kube-dns" {
		t.Errorf("DNS rule %+v", r.Egress[0])
	}
	if !slices.Equal(r.Egress[1].ToFQDNs, want) || r.Egress[1].ToPorts[0].Ports[0].Port != "443" {
		t.Errorf("FQDN rule %+v", r.Egress[1])
	}
	if c := r.Egress[2].ToCIDRSet[0]; c.CIDR != "203.0.113.0/24" || r.Egress[2].ToPorts[0].Ports[0].Port != "8443" {
		t.Errorf("CIDR rule %+v", r.Egress[2])
	}
	if r.Ingress == nil || len(r.Ingress) != 0 {
		t.Error("ingress is not an empty list (deny all)")
	}
}

// TestNoEgress checks a task without an allowlist: no egress rule at all.
func TestNoEgress(t *testing.T) {
	b, err := Export(testTask(t, ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := docs(t, b)
	if e := d["NetworkPolicy"].(*networkingv1.NetworkPolicy).Spec.Egress; len(e) != 0 {
		t.Errorf("egress %v", e)
	}
	if cmd := d["Pod"].(*corev1.Pod).Spec.Containers[0].Command; !slices.Contains(cmd, "run_tests") {
		t.Errorf("command %v", cmd)
	}
}
