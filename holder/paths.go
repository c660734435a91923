package holder

import "path/filepath"

// The files of one session in the runtime directory: its socket, and the
// lock its holder holds for its whole life.
const (
	sockSuffix = ".sock"
	lockSuffix = ".lock"
)

func socketPath(dir, id string) string { return filepath.Join(dir, id+sockSuffix) }

func lockPath(dir, id string) string { return filepath.Join(dir, id+lockSuffix) }
