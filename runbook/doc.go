// Package runbook automates the runbook of a security team that runs
// adversarial tests in a sandbox: a verified launch, a test plan run step
// by step in one sandbox, findings persisted out write-only, a teardown
// that leaves nothing behind, and a suspected-escape procedure that
// preserves evidence.
package runbook
