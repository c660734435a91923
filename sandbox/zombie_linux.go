package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// zombieStatus says, for the report of an init that died during setup,
// how it died: its wait status, read from /proc/PID/stat while it is a
// zombie (the exit_code field), so that the process is still reaped where
// it always is. It waits up to a second for the init to become one, and
// as long again for its output to be read (initOutput), and returns ""
// and false when either does not come; it returns the status too.
func (s *Sandbox) zombieStatus() (string, unix.WaitStatus, bool) {
	pid := s.cmd.Process.Pid
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return "", 0, false
		}
		// The command name may hold anything: the fields follow its last ')'.
		i := bytes.LastIndexByte(b, ')')
		f := bytes.Fields(b[i+1:])
		if i < 0 || len(f) < 50 || string(f[0]) != "Z" {
			continue
		}
		code, err := strconv.Atoi(string(f[49])) // field 52, exit_code
		if err != nil {
			return "", 0, false
		}
		s.initOut.drained(time.Second)
		ws := unix.WaitStatus(code)
		if ws.Signaled() {
			return " (killed by signal " + strconv.Itoa(int(ws.Signal())) + ", " + unix.SignalName(ws.Signal()) + ")", ws, true
		}
		return " (exit status " + strconv.Itoa(ws.ExitStatus()) + ")", ws, true
	}
	return "", 0, false
}
