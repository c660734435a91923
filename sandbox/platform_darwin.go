package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/sandbox/internal/macbox"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// The Mac's part of the sandbox (package macbox holds the rest, tested
// on Linux): sandbox-exec, the user's processes from kern.proc, their
// footprints from proc_pid_rusage, and the host's limits.

// sandboxExec is Seatbelt's command-line front end, shipped with macOS
// (deprecated by Apple, used by every agent sandbox on the Mac).
const sandboxExec = "/usr/bin/sandbox-exec"

// darwinPlatform is this Mac's.
func darwinPlatform() (macbox.Platform, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return macbox.Platform{}, fmt.Errorf("sandbox: airlock's own binary: %w", err)
	}
	return macbox.Platform{
		Wrap: func(profile string, argv []string) []string {
			return append([]string{sandboxExec, "-f", profile}, argv...)
		},
		Procs:     seatbelt.UserProcs,
		Footprint: footprint,
		Limits:    hostLimits,
		Self:      self,
	}, nil
}

// proc_pid_rusage(pid, RUSAGE_INFO_V2, buf) is
// __proc_info(PROC_INFO_CALL_PIDRUSAGE, pid, RUSAGE_INFO_V2, 0, buf, 0).
const (
	procInfoCallPIDRusage = 9
	rusageInfoV2          = 2
)

// footprint is pid's phys_footprint, 0 when it cannot be read.
func footprint(pid int) int64 {
	var buf [seatbelt.RusageInfoV2Size]byte
	//lint:ignore SA1019 x/sys has no wrapper of proc_pid_rusage; its trap number has been stable since Mac OS X 10.5
	_, _, e := unix.Syscall6(unix.SYS_PROC_INFO, procInfoCallPIDRusage, uintptr(pid), rusageInfoV2, 0, uintptr(unsafe.Pointer(&buf[0])), 0)
	if e != 0 {
		return 0
	}
	return seatbelt.RusageFootprint(buf[:])
}

// hostLimits reads what the rlimit plan needs: airlock's hard
// RLIMIT_NOFILE, kern.maxfilesperproc, kern.maxprocperuid and the
// user's processes now.
func hostLimits() seatbelt.HostLimits {
	var h seatbelt.HostLimits
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) == nil && r.Max != unix.RLIM_INFINITY {
		h.NoFileMax = r.Max
	}
	if v, err := unix.SysctlUint32("kern.maxfilesperproc"); err == nil {
		h.MaxFilesPerProc = uint64(v)
	}
	if v, err := unix.SysctlUint32("kern.maxprocperuid"); err == nil {
		h.MaxProcPerUID = int64(v)
	}
	if ps, err := seatbelt.UserProcs(); err == nil {
		h.UserProcs = int64(len(ps))
	}
	return h
}

// hostProvides answers every require name on macOS from package
// seatbelt's table: only a strong control meets it, and none without
// sandbox-exec.
func hostProvides(name string) (bool, string) {
	for _, c := range seatbelt.Controls() {
		if c.Name != name {
			continue
		}
		if c.Strength != seatbelt.Strong {
			return false, "macOS: " + c.Detail
		}
		if _, err := os.Stat(sandboxExec); err != nil {
			return false, "macOS without " + sandboxExec
		}
		return true, ""
	}
	return false, "not a control airlock knows on macOS"
}

// Init returns at once: a command's launcher and the probes run from
// package launch's initialiser instead.
func Init() {}

// InitProgram says how commands start on macOS.
func InitProgram(context.Context) string {
	return "none on macOS: airlock's own binary launches each command (its rlimits, then " + sandboxExec + " with the command's profile)"
}

// Probe runs the start-up probes that need no request in the calling
// process (tests run it from a target).
func Probe(req ProbeRequest) []ProbeResult {
	return []ProbeResult{{Name: "platform", Detail: "macOS: the probes run from a command's launcher (Start), not in the calling process"}}
}
