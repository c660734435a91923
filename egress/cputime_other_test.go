//go:build !linux

package egress

import "testing"

// benchCPU runs fn b.N times; thread CPU time is measured on Linux only.
func benchCPU(b *testing.B, fn func()) {
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
}
