//go:build !darwin

package rundir

// privateVars name the directories, in this order, whose airlock
// subdirectory Path takes when the directory is the user's own and
// private.
var privateVars = []string{"XDG_RUNTIME_DIR"}
