//go:build !linux && !darwin

package audit

// exchange fails closed where writing a log is not supported.
func exchange(string, string) error { return errUnsupported }
