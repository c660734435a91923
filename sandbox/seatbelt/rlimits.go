package seatbelt

import (
	"fmt"
	"math"

	"github.com/airlock-sandbox/airlock/limits"
)

// Rlimit is one resource limit of a command, by its name: the numbers
// differ between systems, and the launcher maps them.
type Rlimit struct {
	Name string `json:"name"`
	Cur  uint64 `json:"cur"`
	Max  uint64 `json:"max"`
}

// HostLimits is what Rlimits needs to know of the host.
type HostLimits struct {
	// NoFileMax is airlock's own hard RLIMIT_NOFILE (0: unknown), which
	// nobody here can raise.
	NoFileMax uint64
	// MaxFilesPerProc is kern.maxfilesperproc (0: unknown): setrlimit
	// refuses an RLIMIT_NOFILE above it.
	MaxFilesPerProc uint64
	// UserProcs is the number of processes the calling user has now.
	UserProcs int64
	// MaxProcPerUID is kern.maxprocperuid (0: unknown), which the kernel
	// lowers RLIMIT_NPROC to.
	MaxProcPerUID int64
}

// Rlimits plans a command's rlimits for caps on a host like h, and notes
// for the receipt where the host lowered one.
//
// RLIMIT_NPROC counts every process of the user, not of the command: it
// is set to the user's processes now plus the tasks cap, so that the
// command may make that many more (while the user's other processes do
// not grow meanwhile). It does not count threads.
func Rlimits(caps limits.Caps, h HostLimits) ([]Rlimit, map[string]string) {
	notes := map[string]string{}
	cpu := uint64(math.Ceil(caps.CPU.Seconds()))
	files := uint64(caps.OpenFiles)
	for _, m := range []uint64{h.NoFileMax, h.MaxFilesPerProc} {
		if m > 0 && files > m {
			files = m
			notes[limits.ControlOpenFiles] = fmt.Sprintf("RLIMIT_NOFILE per process, lowered to the host's limit %d", m)
		}
	}
	procs := h.UserProcs + caps.Tasks
	if h.MaxProcPerUID > 0 && procs > h.MaxProcPerUID {
		procs = h.MaxProcPerUID
		notes[limits.ControlTasks] = fmt.Sprintf("RLIMIT_NPROC lowered to kern.maxprocperuid %d", procs)
	}
	return []Rlimit{
		// SIGXCPU at the cap, SIGKILL a second later for a process that
		// catches it: per process, as macOS has no group to count in.
		{"RLIMIT_CPU", cpu, cpu + 1},
		{"RLIMIT_FSIZE", uint64(caps.DiskWriteBytes), uint64(caps.DiskWriteBytes)},
		{"RLIMIT_NOFILE", files, files},
		{"RLIMIT_NPROC", uint64(procs), uint64(procs)},
		{"RLIMIT_CORE", 0, 0},
	}, notes
}
