//go:build !linux

package payload

// No payload is registered off Linux: Run answers every name with
// "unknown payload" (exit 2), and nothing is attempted.
