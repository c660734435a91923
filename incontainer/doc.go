// Package incontainer holds the tests of airlock inside containers
// (docs/sandbox.md, "Inside a container"): a static airlock binary, in an
// image of its own, run inside rootful and rootless podman containers with
// the container's default seccomp profile, with none, and with one that
// refuses network namespaces; doctor, runs attacked from inside, and the
// demo. It has no code of its own.
package incontainer
