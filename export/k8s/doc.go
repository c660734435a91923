// Package k8s compiles one tool and task of an airlock policy into
// Kubernetes manifests (Export): a Pod, or a kubernetes-sigs/agent-sandbox
// SandboxTemplate and SandboxWarmPool, whose one container runs airlock
// run (the command gate and airlock's sandbox inside the pod), with the
// hardened security context, the policy's caps as resources and limits,
// airlock's seccomp profile, and a NetworkPolicy (optionally a Cilium
// policy with toFQDNs) that lets the pod reach only what airlock's proxy
// needs. docs/export.md is the contract.
//
// It imports the Kubernetes API types, whose package initialisers cost
// about half a millisecond, so only cmd/airlock-export links it, never
// the airlock binary.
package k8s
