//go:build race

package enforcer_test

// raceBuild: the race detector multiplies a process's memory several
// times over, so memory bounds in tests scale with it.
const raceBuild = true
