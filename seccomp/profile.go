package seccomp

import _ "embed" // the container profiles

// The container profiles, generated with the filter by go generate
// (internal/assemble/oci_linux.go) from the same rules.
var (
	//go:embed profile.json
	containerProfile []byte
	//go:embed profile-entrypoint.json
	entrypointProfile []byte
)

// ContainerProfile returns airlock's filter as a seccomp profile file in
// the JSON format that podman, Docker, containerd and CRI-O read: every
// refusal of the filter, each with its reason as the rule's comment, for a
// container that runs the contained command itself. The format cannot
// express all of the filter; docs/export.md lists what it leaves to the
// runtime. The profile is the same on every system airlock builds on.
func ContainerProfile() []byte { return append([]byte(nil), containerProfile...) }

// EntrypointProfile returns the profile for a container whose entrypoint
// is airlock, which builds its own sandbox inside it: ContainerProfile
// without the refusals of the calls the sandbox's init makes while it
// builds the sandbox (namespace creation, mounts, pivot_root, clone3). The
// filter that init installs refuses them to every command it runs, so
// those commands meet both filters.
func EntrypointProfile() []byte { return append([]byte(nil), entrypointProfile...) }
