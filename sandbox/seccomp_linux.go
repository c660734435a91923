package sandbox

import "github.com/airlock-sandbox/airlock/seccomp"

// seccompAvailable reports whether this host and build can install the
// filter.
func seccompAvailable() bool { return seccomp.Available() }
