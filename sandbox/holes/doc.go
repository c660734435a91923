// Package holes holds the sandbox's test holes (initproc.Hole): each
// leaves one control of a sandbox's setup off, so that a test sees the
// start-up probe watching it fail and the start refused. Only test files
// import it, and it registers the holes from its initialiser: airlock's
// own binary links none of it (TestNotInAirlock), so its init holds no
// code that skips a control and refuses any hole it is sent.
package holes
