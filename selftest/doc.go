// Package selftest is airlock's adversarial battery: it attacks live
// sandboxes from the inside, on the host it runs on, and reports attempt by
// attempt which control contained each one.
//
// Every attempt is a payload (see package payload) run by airlock's own
// binary inside a sandbox under a policy made for the battery, or, for the
// command gate, a request the gate must refuse. Each names the control
// expected to stop it (seccomp, landlock, netns, egress-gate, cgroup-memory,
// ...) and is judged on evidence that this control answered: the errno
// the filter returns (and, where the kernel could return the same one, a
// probe the kernel answers differently), the cap the receipt says killed
// the run, the egress gate's decision in the audit stream, the host's own
// canaries. An attempt stopped by something else, or one that could not be
// made at all, is "broken", never "contained".
//
// Everything the battery dials is on the host's loopback or inside the
// sandbox's own network namespace; the proxy's upstream dialer refuses any
// other address, so a metadata attempt is proven by the refusal, never by
// reaching 169.254.169.254.
//
// After the battery, a residue check compares the host before and after:
// processes, cgroups, mounts, namespaces, descriptors and files.
package selftest
