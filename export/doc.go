// Package export compiles one tool and task of an airlock policy into the
// configuration of a container runtime: Podman returns a podman run line,
// and a script that places the container in a network namespace whose
// only way out is airlock proxy. The Kubernetes export is package
// export/k8s, kept out of the airlock binary because the Kubernetes API
// types' package initialisers would slow every airlock start.
//
// Every export starts from Resolve, which reads the policy's controls for
// the task (caps, egress allowlist, the command decided at the command
// gate) and refuses an image that is not pinned by digest. docs/export.md
// is the contract: which control becomes which setting, and what each
// target cannot express.
package export
