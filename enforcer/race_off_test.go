//go:build !race

package enforcer_test

// raceBuild: see race_on_test.go.
const raceBuild = false
