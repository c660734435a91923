//go:build !amd64

package foreignabi

// Supported reports whether Int80 exists on this architecture.
const Supported = false

// Int80 panics: there is no foreign entry point to call on this
// architecture.
func Int80(nr uintptr) uintptr { panic("foreignabi: no int 0x80 on this architecture") }
