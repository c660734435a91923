// Package evidence snapshots, from the host, a sandbox suspected of an
// escape once it is frozen (docs/sessions.md, docs/cli.md): its processes, mounts,
// namespaces, sockets and workspace, into an evidence directory kept
// after the sandbox goes.
//
// Who controls what: the contained code controls every process's name,
// command line and status, the mount table it could change, and every
// name, link and byte in the workspace. They are written as data only:
// JSON for the processes, one quoted path per line for the workspace's
// listing, and the workspace copied as the findings are (package
// findings: no link followed, bounded). Nothing read is followed,
// executed or printed raw.
package evidence

// Record is what a snapshot wrote, file by file, relative to the
// evidence directory.
type Record struct {
	// Dir is the evidence directory.
	Dir string
	// Files lists what was written there.
	Files []string
	// WorkspaceSkipped lists workspace entries not kept (links, devices,
	// over the size cap), with why.
	WorkspaceSkipped []string
	// Errors lists what could not be collected; the rest was.
	Errors []string
}
