package selftest

import (
	_ "embed"
	"fmt"

	"github.com/airlock-sandbox/airlock/policy"
)

// policyJSON is the battery's own policy: the payload tool (airlock's own
// binary, bound in at /.airlock/self) with a variant per cap under test,
// the tools the command-gate attempts ask through, and the egress tasks
// of the metadata attempts, whose names only the battery's resolver
// answers.
//
//go:embed policy.json
var policyJSON []byte

// PolicyName is the battery policy's name in the audit stream.
const PolicyName = "<embedded selftest policy>"

// Policy returns the battery's policy, loaded as any policy file is.
func Policy() (*policy.Loaded, error) {
	l, err := policy.Parse(PolicyName, policyJSON)
	if err != nil {
		return nil, fmt.Errorf("selftest: the embedded policy: %w", err)
	}
	return l, nil
}

// The battery's tools and tasks.
const (
	toolPayload = "selftest"
	toolMemory  = "selftest-memory"
	toolPids    = "selftest-pids"
	toolCPU     = "selftest-cpu"
	toolWall    = "selftest-wall"
	toolDisk    = "selftest-disk"
	toolFDs     = "selftest-fds"
	toolOutput  = "selftest-output"
	toolTests   = "st-tests"
	toolReader  = "st-reader"
	toolShadow  = "st-shadow"

	taskNone     = "selftest"
	taskUpstream = "st-upstream"
	taskRebind   = "st-rebind"
	taskWild     = "st-wild"
)

// Caps of the battery's tools that attempts are judged against.
const (
	capDiskMiB   = 4
	capOpenFiles = 32
	capOutputMiB = 1
	// capMemoryMiB is the memory cap of toolPayload (the policy's own).
	capMemoryMiB = 256
	// capSigpending is RLIMIT_SIGPENDING, every sandbox's (limits).
	capSigpending = 1024
	// capDiskInodes is the inode cap of toolDisk's writable tmpfs: one
	// per 4 KiB of the disk cap, at least 1024 (docs/sandbox.md, "Caps").
	capDiskInodes = max(capDiskMiB<<20/4096, 1024)
)
