// Package regress is the benchmark regression check that the test command
// (and so CI) runs: TestRatios times airlock beside bubblewrap in the same
// run and fails when one of airlock's ratios to bwrap worsens by more than
// a set margin against the ratios committed in baseline.json. See
// docs/sandbox.md, "Speed".
package regress
