//go:build !unix

package canary

import "os"

// lockCanary has no owner lock to take off Unix, where airlock runs no
// sandbox.
func lockCanary(dir string) (*os.File, error) { return os.CreateTemp(dir, canaryLock) }

// sweepCanaries does nothing off Unix.
func sweepCanaries(string) {}
