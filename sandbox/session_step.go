package sandbox

import (
	"errors"
	"fmt"
	"path"

	"github.com/airlock-sandbox/airlock/limits"
)

// normalizeStep checks a step of a session whose caps are session and
// fills in its defaults.
func normalizeStep(st Step, session limits.Caps) (Step, StepCaps, error) {
	if st.Path == "" || !path.IsAbs(st.Path) || path.Clean(st.Path) != st.Path {
		return st, StepCaps{}, fmt.Errorf("sandbox: step path %q: want a clean absolute path (the command gate resolves it)", st.Path)
	}
	if err := checkTree(st.Tree, st.Path); err != nil {
		return st, StepCaps{}, err
	}
	if len(st.Args) == 0 {
		st.Args = []string{st.Path}
	}
	if st.Dir == "" {
		st.Dir = WorkspaceDir
	}
	if !path.IsAbs(st.Dir) {
		return st, StepCaps{}, fmt.Errorf("sandbox: step dir %q: want an absolute path inside the sandbox", st.Dir)
	}
	caps := StepCaps{Wall: session.Wall, CPU: session.CPU}
	if st.Caps != nil {
		caps = *st.Caps
	}
	if caps.OutputBytes == 0 {
		caps.OutputBytes = session.OutputBytes
	}
	if caps.MemoryBytes == 0 || caps.MemoryBytes > session.MemoryBytes {
		caps.MemoryBytes = session.MemoryBytes
	}
	if caps.Tasks == 0 || caps.Tasks > session.Tasks {
		caps.Tasks = session.Tasks
	}
	switch {
	case caps.Wall <= 0 || caps.CPU <= 0 || caps.OutputBytes < 0 || caps.MemoryBytes < 0 || caps.Tasks < 0:
		return st, caps, errors.New("sandbox: step caps: wall and cpu must be positive, output, memory and tasks positive or 0 for the session's (a zero cap is not \"unlimited\")")
	case caps.CPU > session.CPU:
		return st, caps, fmt.Errorf("sandbox: step caps: cpu %v exceeds the session's %v", caps.CPU, session.CPU)
	case caps.OutputBytes > session.OutputBytes:
		return st, caps, fmt.Errorf("sandbox: step caps: output %d bytes exceeds the session's %d", caps.OutputBytes, session.OutputBytes)
	}
	return st, caps, nil
}
