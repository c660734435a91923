// Package privstate keeps airlock's private per-user state: directories
// that only their owner can reach (0700, checked component by component,
// no link followed; one of the caller's that others could only read is
// closed to them) and files in them that are the owner's alone (0600,
// read without following a link or blocking on a FIFO, written through a
// temporary file linked or renamed into place). The approval store and
// the audit log's signing key live there; nothing in it may ever be
// bound into a sandbox.
package privstate
