package sandbox

import "errors"

// SmallInit is the name of the small init program (cmd/airlock-init)
// that a sandbox runs as its init, instead of the calling binary, when it
// lies beside that binary, trusted and of the same build (docs/sandbox.md,
// "The small init").
const SmallInit = "airlock-init"

// ErrOtherBuild is the error of a sandbox whose airlock-init refused to
// run because it is of another build than the calling binary.
var ErrOtherBuild = errors.New("airlock-init beside airlock is from another build: install both from one source, or remove it")
