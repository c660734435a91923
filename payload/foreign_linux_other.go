//go:build linux && !amd64

package payload

// foreignCalls is empty off amd64: no foreign ABI is reachable from this
// architecture's native code by the payload, and foreign-abi says so.
var foreignCalls = map[string]func() int64{}
