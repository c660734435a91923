package k8s

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/export"
)

// Kinds of export.
const (
	KindPod             = "pod"
	KindSandboxTemplate = "sandbox-template"
)

// SeccompProfile is the Localhost profile the pod names, relative to the
// kubelet's seccomp directory (/var/lib/kubelet/seccomp): the file
// seccomp.EntrypointProfile returns, installed on every node.
const SeccompProfile = "airlock/entrypoint.json"

// Paths inside the pod.
const (
	policyDir  = "/etc/airlock"
	stateDir   = "/var/lib/airlock"
	policyFile = policyDir + "/policy.json"
)

// Margins over the policy's caps: airlock's own memory in the container
// beside the sandbox it caps, the container log in the ephemeral storage,
// and the time to pull the image, start and tear down, over the wall cap.
const (
	airlockMemoryMiB  = 64
	logStorageMiB     = 64
	deadlineMarginSec = 60
)

// Options are the Kubernetes export's settings beyond the task.
type Options struct {
	// Kind is KindPod (default) or KindSandboxTemplate.
	Kind string
	// WarmPool, with KindSandboxTemplate, adds a SandboxWarmPool of that
	// many sandboxes.
	WarmPool int32
	// Cilium adds a CiliumNetworkPolicy with toFQDNs from the allowlist,
	// and leaves the NetworkPolicy denying all egress.
	Cilium bool
	// Namespace is the objects' namespace ("" leaves it to kubectl).
	Namespace string
}

// Export returns the manifests, as one YAML stream: a ConfigMap holding
// the policy, the Pod (or the SandboxTemplate and the SandboxWarmPool),
// the NetworkPolicy (a Pod's; a template carries its own), and with
// Cilium a CiliumNetworkPolicy.
func Export(t *export.Task, o Options) ([]byte, error) {
	kind := o.Kind
	if kind == "" {
		kind = KindPod
	}
	if kind != KindPod && kind != KindSandboxTemplate {
		return nil, fmt.Errorf("export k8s: kind %q: want %s or %s", kind, KindPod, KindSandboxTemplate)
	}
	if o.WarmPool < 0 || o.WarmPool > 0 && kind != KindSandboxTemplate {
		return nil, fmt.Errorf("export k8s: a warm pool (%d) needs --kind %s", o.WarmPool, KindSandboxTemplate)
	}
	pol, err := export.PolicyJSON(t.Policy())
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(pol)
	name := "airlock-" + dnsLabel(t.Tool) + "-" + hex.EncodeToString(sum[:4])
	// Refused here as Kubernetes would refuse it.
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return nil, fmt.Errorf("export k8s: name %q from tool %q: %s", name, t.Tool, strings.Join(errs, "; "))
	}
	labels := map[string]string{"app.kubernetes.io/name": "airlock", "app.kubernetes.io/instance": name}
	annotations := map[string]string{"airlock.dev/tool": t.Tool, "airlock.dev/task": t.TaskName,
		"airlock.dev/policy": t.PolicyDigest, "airlock.dev/command-decision": t.Decision.String()}
	meta := func(kind, apiVersion string) (metav1.TypeMeta, metav1.ObjectMeta) {
		return metav1.TypeMeta{Kind: kind, APIVersion: apiVersion},
			metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels, Annotations: annotations}
	}
	var docs []any
	cm := &corev1.ConfigMap{Data: map[string]string{"policy.json": string(pol)}}
	cm.TypeMeta, cm.ObjectMeta = meta("ConfigMap", "v1")
	docs = append(docs, cm)
	spec := podSpec(t, name)
	rules := egressRules(t, o.Cilium)
	switch kind {
	case KindPod:
		pod := &corev1.Pod{Spec: spec}
		pod.TypeMeta, pod.ObjectMeta = meta("Pod", "v1")
		np := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: labels},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress:      rules,
		}}
		np.TypeMeta, np.ObjectMeta = meta("NetworkPolicy", "networking.k8s.io/v1")
		docs = append(docs, pod, np)
	case KindSandboxTemplate:
		st := &SandboxTemplate{Spec: SandboxTemplateSpec{
			PodTemplate: PodTemplate{Spec: spec, ObjectMeta: PodMetadata{Labels: labels, Annotations: annotations}},
			// Managed, with airlock's rules instead of the controller's
			// default (the public internet): no ingress, and egress only
			// as egressRules says.
			NetworkPolicy:              &NetworkPolicySpec{Egress: rules},
			NetworkPolicyManagement:    "Managed",
			EnvVarsInjectionPolicy:     "Disallowed",
			VolumeClaimTemplatesPolicy: "Disallowed",
		}}
		st.TypeMeta, st.ObjectMeta = meta("SandboxTemplate", AgentSandboxAPIVersion)
		docs = append(docs, st)
		if o.WarmPool > 0 {
			n := o.WarmPool
			wp := &SandboxWarmPool{Spec: SandboxWarmPoolSpec{Replicas: &n, TemplateRef: SandboxTemplateRef{Name: name}}}
			wp.TypeMeta, wp.ObjectMeta = meta("SandboxWarmPool", AgentSandboxAPIVersion)
			docs = append(docs, wp)
		}
	}
	if o.Cilium {
		cnp := &CiliumNetworkPolicy{Spec: ciliumRule(t, labels)}
		cnp.TypeMeta, cnp.ObjectMeta = meta("CiliumNetworkPolicy", "cilium.io/v2")
		docs = append(docs, cnp)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# airlock export k8s (docs/export.md): tool %q, task %q, from %s (%s).\n", t.Tool, t.TaskName, t.PolicySource, t.PolicyDigest)
	fmt.Fprintf(&out, "# Every node needs the seccomp profile at <kubelet root>/seccomp/%s.\n", SeccompProfile)
	for _, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("export k8s: encode: %w", err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return out.Bytes(), nil
}

// dnsLabel makes s fit in a DNS label: lower case, [a-z0-9-], at most 40
// characters, no leading or trailing dash.
func dnsLabel(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 40 {
		out = strings.Trim(out[:40], "-")
	}
	if out == "" {
		out = "tool"
	}
	return out
}

// podSpec is the pod: one container running airlock run for the command,
// non-root in a user namespace, no capabilities, read-only root,
// airlock's seccomp profile, the caps as resources.
func podSpec(t *export.Task, name string) corev1.PodSpec {
	c := t.Caps
	task := t.TaskName
	if task == "" {
		task = t.Tool // airlock run's default; a tool with no allowlist reaches nothing
	}
	argv := []string{"airlock", "run", "--policy", policyFile, "--tool", t.Tool, "--task", task,
		"--workspace", "/workspace", "--findings", "/findings", "--"}
	argv = append(argv, t.Command...)
	no, yes := false, true
	uid := int64(65534)
	deadline := t.WallSeconds() + deadlineMarginSec
	grace := int64(10)
	disk := resource.MustParse(strconv.FormatInt(c.DiskWriteMB, 10) + "Mi")
	dirs := []struct{ name, path string }{{"tmp", "/tmp"}, {"workspace", "/workspace"}, {"findings", "/findings"}, {"state", stateDir}}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for _, d := range dirs {
		volumes = append(volumes, corev1.Volume{Name: d.name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &disk}}})
		mounts = append(mounts, corev1.VolumeMount{Name: d.name, MountPath: d.path})
	}
	volumes = append(volumes, corev1.Volume{Name: "policy", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}}}})
	mounts = append(mounts, corev1.VolumeMount{Name: "policy", MountPath: policyDir, ReadOnly: true})
	res := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse(strconv.FormatInt(c.MemoryMB+airlockMemoryMiB, 10) + "Mi"),
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(t.CPUs()*1000), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse(strconv.FormatInt(int64(len(dirs))*c.DiskWriteMB+logStorageMiB, 10) + "Mi"),
	}
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr(SeccompProfile)}
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		HostUsers:                     &no,
		AutomountServiceAccountToken:  &no,
		EnableServiceLinks:            &no,
		ActiveDeadlineSeconds:         &deadline,
		TerminationGracePeriodSeconds: &grace,
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
			SeccompProfile: seccomp},
		Containers: []corev1.Container{{
			Name:    "airlock",
			Image:   t.Image.String(),
			Command: argv,
			Env: []corev1.EnvVar{{Name: "AIRLOCK_AUDIT", Value: stateDir + "/audit.jsonl"},
				{Name: "XDG_STATE_HOME", Value: stateDir}, {Name: "HOME", Value: "/tmp"}},
			Resources:    corev1.ResourceRequirements{Limits: res, Requests: res},
			VolumeMounts: mounts,
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
				AllowPrivilegeEscalation: &no, Privileged: &no, ReadOnlyRootFilesystem: &yes,
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile: seccomp,
			},
		}},
		Volumes: volumes,
	}
}

func ptr[T any](v T) *T { return &v }

// privateV4 and privateV6 are the ranges a name entry's addresses are
// kept out of in the NetworkPolicy, beside the always-blocked floor:
// loopback, private, shared, multicast and reserved space, which a name in
// a policy should not reach by accident (list the address or CIDR to
// open one).
var (
	privateV4 = []string{"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/4", "240.0.0.0/4"}
	privateV6 = []string{"::1/128", "fc00::/7", "ff00::/8"}
)

// egressRules are the pod's NetworkPolicy egress rules: what airlock run's
// proxy in the pod needs for the allowlist, nothing else. With Cilium
// they are empty (deny all) and the CiliumNetworkPolicy allows instead.
func egressRules(t *export.Task, cilium bool) []networkingv1.NetworkPolicyEgressRule {
	if cilium || len(t.Allowlist) == 0 {
		return []networkingv1.NetworkPolicyEgressRule{}
	}
	var rules []networkingv1.NetworkPolicyEgressRule
	var namePorts []uint16
	anyPort := false
	for _, e := range t.Allowlist {
		if e.Kind == egress.EntryPrefix {
			rules = append(rules, networkingv1.NetworkPolicyEgressRule{
				To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: e.Prefix.String(), Except: except(e.Prefix, blocked(t))}}},
				Ports: tcpPorts(e.Port),
			})
			continue
		}
		anyPort = anyPort || e.Port == 0
		namePorts = append(namePorts, e.Port)
	}
	if len(namePorts) > 0 {
		// The proxy resolves the names: DNS to the cluster's resolver.
		rules = append([]networkingv1.NetworkPolicyEgressRule{dnsRule()}, rules...)
		var ports []networkingv1.NetworkPolicyPort
		if !anyPort {
			slices.Sort(namePorts)
			for _, p := range slices.Compact(namePorts) {
				ports = append(ports, tcpPorts(p)...)
			}
		} else {
			ports = tcpPorts(0)
		}
		var peers []networkingv1.NetworkPolicyPeer
		for _, all := range []string{"0.0.0.0/0", "::/0"} {
			p := netip.MustParsePrefix(all)
			peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: all,
				Except: except(p, append(blocked(t), parse(append(privateV4, privateV6...))...))}})
		}
		rules = append(rules, networkingv1.NetworkPolicyEgressRule{To: peers, Ports: ports})
	}
	return rules
}

// dnsRule allows DNS to the cluster's resolver (kube-dns in kube-system).
func dnsRule() networkingv1.NetworkPolicyEgressRule {
	port := intstr.FromInt32(53)
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	return networkingv1.NetworkPolicyEgressRule{
		To: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
		}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &port}, {Protocol: &tcp, Port: &port}},
	}
}

// tcpPorts is one TCP port, or every TCP port for 0.
func tcpPorts(p uint16) []networkingv1.NetworkPolicyPort {
	tcp := corev1.ProtocolTCP
	if p == 0 {
		return []networkingv1.NetworkPolicyPort{{Protocol: &tcp}}
	}
	port := intstr.FromInt32(int32(p))
	return []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}
}

// blocked is the built-in floor's prefixes and the policy's
// alwaysBlocked addresses.
func blocked(t *export.Task) []netip.Prefix {
	out := egress.FloorPrefixes()
	for _, e := range t.AlwaysBlocked {
		if e.Kind == egress.EntryPrefix {
			out = append(out, e.Prefix)
		}
	}
	return out
}

func parse(ss []string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// except returns the prefixes strictly inside p, of p's family, without
// any that another of them covers, sorted: what an ipBlock's except may
// hold.
func except(p netip.Prefix, ps []netip.Prefix) []string {
	var in []netip.Prefix
	for _, q := range ps {
		if q.Addr().Is4() == p.Addr().Is4() && q.Bits() > p.Bits() && p.Contains(q.Addr()) {
			in = append(in, q.Masked())
		}
	}
	var out []string
	for _, q := range in {
		covered := false
		for _, r := range in {
			covered = covered || r != q && r.Bits() <= q.Bits() && r.Contains(q.Addr())
		}
		if !covered && !slices.Contains(out, q.String()) {
			out = append(out, q.String())
		}
	}
	slices.Sort(out)
	return out
}

// ciliumRule is the Cilium policy: DNS to kube-dns for the allowlist's
// names only (Cilium's DNS proxy learns the addresses), then the names as
// toFQDNs and the addresses as toCIDRSet, each with its port.
func ciliumRule(t *export.Task, labels map[string]string) CiliumRule {
	r := CiliumRule{EndpointSelector: metav1.LabelSelector{MatchLabels: labels}, Ingress: []CiliumIngressRule{}, Egress: []CiliumEgressRule{}}
	var dns []FQDNSelector
	byPort := map[uint16][]FQDNSelector{}
	var ports []uint16
	for _, e := range t.Allowlist {
		var sel FQDNSelector
		switch e.Kind {
		case egress.EntryExact:
			sel.MatchName = e.Name
		case egress.EntrySuffix:
			sel.MatchPattern = "*." + e.Name
		case egress.EntryAny:
			sel.MatchPattern = "*"
		case egress.EntryPrefix:
			r.Egress = append(r.Egress, CiliumEgressRule{ToCIDRSet: []CIDRRule{{CIDR: e.Prefix.String(), Except: except(e.Prefix, blocked(t))}},
				ToPorts: ciliumPorts(e.Port)})
			continue
		}
		if !slices.Contains(dns, sel) {
			dns = append(dns, sel)
		}
		if _, ok := byPort[e.Port]; !ok {
			ports = append(ports, e.Port)
		}
		byPort[e.Port] = append(byPort[e.Port], sel)
	}
	if len(dns) == 0 {
		return r
	}
	slices.Sort(ports)
	var named []CiliumEgressRule
	for _, p := range ports {
		named = append(named, CiliumEgressRule{ToFQDNs: byPort[p], ToPorts: ciliumPorts(p)})
	}
	dnsRule := CiliumEgressRule{
		ToEndpoints: []metav1.LabelSelector{{MatchLabels: map[string]string{
			"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}},
		ToPorts: []PortRule{{Ports: []PortProtocol{{Port: "53", Protocol: "ANY"}}, Rules: &L7Rules{DNS: dns}}},
	}
	r.Egress = append(append([]CiliumEgressRule{dnsRule}, named...), r.Egress...)
	return r
}

// ciliumPorts is one TCP port, or none (every port) for 0.
func ciliumPorts(p uint16) []PortRule {
	if p == 0 {
		return nil
	}
	return []PortRule{{Ports: []PortProtocol{{Port: strconv.Itoa(int(p)), Protocol: "TCP"}}}}
}
