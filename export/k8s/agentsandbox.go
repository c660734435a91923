package k8s

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubernetes-sigs/agent-sandbox types airlock writes: the fields of
// extensions.agents.x-k8s.io/v1beta1 (the CRDs' storage version; the
// project has no v1 API version yet) that the export sets, with the
// upstream JSON names, written here rather than imported so that the
// export does not depend on the controller's module.

// AgentSandboxAPIVersion is the API version of SandboxTemplate and
// SandboxWarmPool.
const AgentSandboxAPIVersion = "extensions.agents.x-k8s.io/v1beta1"

// SandboxTemplate is a template for agent-sandbox Sandboxes.
type SandboxTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              SandboxTemplateSpec `json:"spec"`
}

// SandboxTemplateSpec is a template's spec: the pod, and the network
// policy the controller applies to every sandbox made from it.
type SandboxTemplateSpec struct {
	PodTemplate                PodTemplate        `json:"podTemplate"`
	NetworkPolicy              *NetworkPolicySpec `json:"networkPolicy,omitempty"`
	NetworkPolicyManagement    string             `json:"networkPolicyManagement,omitempty"`
	EnvVarsInjectionPolicy     string             `json:"envVarsInjectionPolicy,omitempty"`
	VolumeClaimTemplatesPolicy string             `json:"volumeClaimTemplatesPolicy,omitempty"`
}

// PodTemplate is the sandbox's pod.
type PodTemplate struct {
	Spec       corev1.PodSpec `json:"spec"`
	ObjectMeta PodMetadata    `json:"metadata"`
}

// PodMetadata is the pod's labels and annotations.
type PodMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NetworkPolicySpec is the restricted network policy of a template: the
// controller sets the pod selector and the policy types.
type NetworkPolicySpec struct {
	Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`
	Egress  []networkingv1.NetworkPolicyEgressRule  `json:"egress,omitempty"`
}

// SandboxWarmPool keeps Replicas sandboxes of a template started.
type SandboxWarmPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              SandboxWarmPoolSpec `json:"spec"`
}

// SandboxWarmPoolSpec is a warm pool's spec.
type SandboxWarmPoolSpec struct {
	Replicas    *int32             `json:"replicas,omitempty"`
	TemplateRef SandboxTemplateRef `json:"sandboxTemplateRef"`
}

// SandboxTemplateRef names a SandboxTemplate.
type SandboxTemplateRef struct {
	Name string `json:"name"`
}
