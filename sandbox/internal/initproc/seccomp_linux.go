package initproc

import "github.com/airlock-sandbox/airlock/seccomp"

// installSeccomp applies the seccomp filter to every thread of the calling
// process (TSYNC) and describes it for the receipt.
func installSeccomp() (string, error) {
	if !seccomp.Available() {
		return "", errNoSeccomp
	}
	if err := seccomp.Install(); err != nil {
		return "", err
	}
	return seccomp.Describe(), nil
}
