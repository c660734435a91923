package k8s

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The Cilium types airlock writes: the fields of cilium.io/v2
// CiliumNetworkPolicy that the export sets, with Cilium's JSON names,
// written here because Cilium's module is far larger than these few
// fields.

// CiliumNetworkPolicy is a Cilium network policy.
type CiliumNetworkPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CiliumRule `json:"spec"`
}

// CiliumRule selects endpoints and lists what they may reach.
type CiliumRule struct {
	EndpointSelector metav1.LabelSelector `json:"endpointSelector"`
	Ingress          []CiliumIngressRule  `json:"ingress"`
	Egress           []CiliumEgressRule   `json:"egress"`
}

// CiliumIngressRule is an ingress rule; the export writes none, which
// with an empty ingress list denies all ingress.
type CiliumIngressRule struct{}

// CiliumEgressRule is one egress rule: destinations, and the ports.
type CiliumEgressRule struct {
	ToEndpoints []metav1.LabelSelector `json:"toEndpoints,omitempty"`
	ToFQDNs     []FQDNSelector         `json:"toFQDNs,omitempty"`
	ToCIDRSet   []CIDRRule             `json:"toCIDRSet,omitempty"`
	ToPorts     []PortRule             `json:"toPorts,omitempty"`
}

// FQDNSelector is a name (MatchName) or a pattern (MatchPattern, "*" for
// one label's characters).
type FQDNSelector struct {
	MatchName    string `json:"matchName,omitempty"`
	MatchPattern string `json:"matchPattern,omitempty"`
}

// CIDRRule is a CIDR and the CIDRs inside it that are excluded.
type CIDRRule struct {
	CIDR   string   `json:"cidr"`
	Except []string `json:"except,omitempty"`
}

// PortRule is ports and, for DNS, the names that may be looked up.
type PortRule struct {
	Ports []PortProtocol `json:"ports,omitempty"`
	Rules *L7Rules       `json:"rules,omitempty"`
}

// PortProtocol is a port and its protocol (TCP, UDP, ANY).
type PortProtocol struct {
	Port     string `json:"port"`
	Protocol string `json:"protocol,omitempty"`
}

// L7Rules holds the DNS rules of a port.
type L7Rules struct {
	DNS []FQDNSelector `json:"dns,omitempty"`
}
