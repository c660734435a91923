package foreignabi

// Supported reports whether Int80 exists on this architecture.
const Supported = true

// Int80 makes i386 system call nr with no arguments through int 0x80 and
// returns the kernel's raw result (a negative errno on failure).
//
//go:noescape
func Int80(nr uintptr) uintptr
