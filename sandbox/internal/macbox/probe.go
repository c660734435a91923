//go:build unix

package macbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/airlock-sandbox/airlock/internal/reexec"
	"github.com/airlock-sandbox/airlock/sandbox/internal/launch"
)

// maxProbeOutput bounds what a probe prints.
const maxProbeOutput = 64 << 10

// ProbeChecks are the start-up probes of a box: from inside, under the
// profile of a command, nothing of the user's can be read (home,
// ~/.ssh, the canary file), nothing outside the copies written (the
// box's own directory, home, the host's /tmp), the workspace copy can
// be, no host address but the proxy's reached (the canary listener),
// and no descriptor but stdio is open.
func (b *Box) ProbeChecks(home, canaryFile, canaryAddr string) []launch.Check {
	var cs []launch.Check
	if home != "" {
		cs = append(cs,
			launch.Check{Name: "home", Kind: launch.Unreadable, Target: home},
			launch.Check{Name: "ssh", Kind: launch.Unreadable, Target: filepath.Join(home, ".ssh")},
			launch.Check{Name: "write_home", Kind: launch.Unwritable, Target: home})
	}
	if canaryFile != "" {
		cs = append(cs, launch.Check{Name: "canary_file", Kind: launch.Unreadable, Target: canaryFile})
	}
	cs = append(cs,
		launch.Check{Name: "write_box", Kind: launch.Unwritable, Target: b.Root},
		launch.Check{Name: "write_tmp", Kind: launch.Unwritable, Target: "/private/tmp"},
		launch.Check{Name: "write_workspace", Kind: launch.Writable, Target: b.Workspace})
	if canaryAddr != "" {
		cs = append(cs, launch.Check{Name: "canary_addr", Kind: launch.Unreachable, Target: canaryAddr})
	}
	return append(cs, launch.Check{Name: "stdio_only", Kind: launch.StdioOnly})
}

// Probe runs checks from inside the box: airlock's own binary, under the
// profile a command gets (with its own binary allowed), its rlimits and
// the watch. A probe that could not run is one failed result.
func (b *Box) Probe(checks []launch.Check, caps Caps) []launch.Result {
	req, err := json.Marshal(checks)
	if err != nil {
		return []launch.Result{{Name: "probe", Detail: err.Error()}}
	}
	var out, errOut bytes.Buffer
	// Under sandbox-exec, which executes argv[0]: the program is named in
	// the environment alone.
	r, err := b.Start(Command{Path: b.cfg.Platform.Self, Args: []string{b.cfg.Platform.Self, string(req)},
		Env: []string{reexec.Mark(launch.ProbeArg0)}, Stdout: &limited{&out, maxProbeOutput}, Stderr: &limited{&errOut, 4096},
		Caps: caps, name: "probe", host: true})
	if err != nil {
		return []launch.Result{{Name: "probe", Detail: "the probe could not start: " + err.Error()}}
	}
	o := r.Wait()
	var res []launch.Result
	if o.ExitCode != 0 || json.Unmarshal(out.Bytes(), &res) != nil || len(res) != len(checks) {
		return []launch.Result{{Name: "probe", Detail: fmt.Sprintf("the probe ended with status %d, signal %d, killed by %q: %q",
			o.ExitCode, o.Signal, o.KilledBy, errOut.String())}}
	}
	return res
}

// ProbeCaps are the caps a probe runs under when the box's are larger.
func ProbeCaps(c Caps) Caps {
	return Caps{Wall: min(c.Wall, 10*time.Second), CPU: min(c.CPU, 10*time.Second), MemoryBytes: c.MemoryBytes, Tasks: c.Tasks}
}

// limited keeps at most n bytes and discards the rest.
type limited struct {
	w *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
