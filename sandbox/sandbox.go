package sandbox

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// Config describes one sandboxed run.
type Config struct {
	// Path is the absolute path of the target inside the sandbox, already
	// chosen by the command gate.
	Path string
	// Tree, when set, makes Path a workspace program in Tree (WorkspaceDir
	// or TmpDir): the init resolves it there as it runs it, following
	// links only inside Tree, and runs the regular executable file found;
	// Result.Path names it. A path that leaves Tree by a link fails to
	// start (ErrStepStart).
	Tree string
	// Args are the target's arguments, Args[0] included; empty means
	// []string{Path}.
	Args []string
	// Env is the target's whole environment; the proxy variables are
	// added to it when Proxy is set.
	Env []string
	// Dir is the working directory inside; "" means /workspace.
	Dir string
	// Workspace is a host directory COPIED into /workspace (never bound);
	// "" leaves /workspace empty.
	Workspace string
	// Findings is a host directory that receives the contents of
	// /findings after the run (regular files and directories only, as
	// data); "" discards them. Start makes it, or takes it when it is an
	// empty directory of the caller's, and refuses anything else (a path
	// through a symbolic link, a file, a directory with entries): see
	// docs/sandbox.md, "Findings".
	Findings string
	// ReadOnly host paths are bound read-only at the same place; nil means
	// the system directories (/usr, /bin, /sbin, /lib*, /etc). A symbolic
	// link (such as /bin on a merged-/usr host) is recreated as the same
	// link. It must be nil when Root is set.
	// These, ReadWrite and Binds are refused by package hostpath's rules
	// (docs/sandbox.md): by their words when Start begins, and by their
	// real path and their place among the host's mounts when the init
	// binds them.
	ReadOnly []string
	// Root is a host directory — an unpacked image's rootfs, for example
	// image.Prepared.Rootfs — shown read-only as the sandbox's root
	// instead of the host's system directories: each of its top-level
	// entries is bound read-only (or, for a symbolic link, recreated) at
	// the same name, except those the sandbox makes itself (/proc, /dev,
	// /tmp, /workspace, /findings, /.airlock). Nothing of the host's own
	// tree is bound then but ReadWrite and Binds. The parent opens it, so
	// it may sit in a directory closed to the sandbox's uid (a 0700
	// image cache). Setting it together with ReadOnly is an error: the
	// two describe the same thing.
	Root string
	// ReadWrite host paths are bound writable at the same place.
	ReadWrite []string
	// Binds are host files or directories bound read-only at another
	// place inside (see BindSelf).
	Binds []Bind
	// SearchPath is the policy's command search path. On macOS it is,
	// with Path, all a process may execute (the Seatbelt profile's exec
	// rules); Linux shows what ReadOnly shows and ignores it.
	SearchPath []string
	// Hide are host paths inside ReadOnly or ReadWrite trees that are
	// masked (an empty directory or an empty file is mounted over them):
	// for example the policy file or the audit log when they sit in /etc.
	Hide []string
	// Caps are the resource caps; every field must be positive.
	Caps limits.Caps
	// Proxy makes a listener on 127.0.0.1 inside the network namespace for
	// the egress proxy (see Sandbox.Listener) and points the target's proxy
	// variables at it.
	Proxy bool
	// ProxyAuth, "user:token", is what the proxy requires of every
	// request where its listener is not private to the sandbox
	// (PrivateListener false: macOS's, on the host's loopback); the proxy
	// variables carry it as their URLs' user and password. Ignored where
	// the listener is private.
	ProxyAuth string
	// Require names mechanisms that must be present ("userns", "seccomp",
	// "landlock", "landlock-net", "cgroup", "cgroup-memory", ...); one the
	// host lacks makes Start fail with an error matching ErrRequirement.
	Require []string
	// Weaker names the weaker modes the caller accepts where the host
	// cannot do better ("egress-unenforced", WeakerModes); without one, such a host
	// refuses the run. The receipt names a weaker mode whenever one is
	// used (docs/sandbox.md, "Inside a container").
	Weaker []string
	// Stdin, Stdout and Stderr are the target's standard streams. They
	// always reach the target through pipes, never as the caller's own
	// descriptors, so a terminal is never passed in. Nil Stdin reads as
	// empty; nil Stdout or Stderr discards.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// ID names the run (cgroup names, logs): letters, digits, '.', '_',
	// '-'; "" means a random one.
	ID string
	// Hostname is the sandbox's host name; "" means "airlock".
	Hostname string
	// Probes, when set, are run by the init inside the sandbox after the
	// privilege drop and before Release; Start fails with ErrProbe if any
	// fails (see ProbeRequest).
	Probes *ProbeRequest

	// private are the real paths of the host files HideFiles hid: no
	// tree may lie inside one, nor may a ReadWrite tree hold one or the
	// directory it is in (checkPrivate).
	private []string
}

// weakerEgressUnenforced accepts a sandbox whose egress the kernel does
// not hold: where the host refuses a network namespace and Landlock has
// no TCP rules (or there is no seccomp filter), only programs that honour
// the proxy variables use the proxy.
const weakerEgressUnenforced = "egress-unenforced"

// weakerTrustd lets processes on macOS reach trustd to verify
// certificates, whose fetches bypass the proxy (package seatbelt); it
// changes nothing on Linux.
const weakerTrustd = seatbelt.WeakerTrustd

// WeakerModes lists the names Config.Weaker may carry.
func WeakerModes() []string { return []string{weakerEgressUnenforced, weakerTrustd} }

// Bind is a host file or directory bound read-only at Inside, an absolute
// path that must not lie under a bound tree or a sandbox directory.
type Bind = initproc.Bind

// defaultReadOnly is the filesystem view of a Config whose ReadOnly is nil.
var defaultReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// SelfPath is where BindSelf binds the calling binary inside the sandbox.
const SelfPath = "/.airlock/self"

// Inside paths of the sandbox's own directories.
const (
	WorkspaceDir = initproc.WorkspaceDir
	FindingsDir  = initproc.FindingsDir
	TmpDir       = initproc.TmpDir
)

// ErrRequirement is matched (errors.Is) by the error Start returns when
// Config.Require names a mechanism this host does not offer this user.
// airlock exits 125 on it; nothing was run.
var ErrRequirement = errors.New("required mechanism unavailable")

// ErrProbe is matched by the error Start returns when a start-up probe
// failed inside the sandbox; nothing was run.
var ErrProbe = errors.New("start-up probe failed")

// ErrInitDied is matched by the error a session's Exec returns when the
// session's init died on its own (see Result.InitDied): the session has
// ended, and its integrity is not assured.
var ErrInitDied = errors.New("the sandbox's init died: the sandbox's integrity is not assured")

// ErrUnsupported is returned by Start on systems without a sandbox.
var ErrUnsupported = errors.New("sandbox: not supported on this system (Linux and macOS only; no weaker mode chosen)")

// Result is what happened to a run.
type Result struct {
	// Path is the file the target ran: Config.Path or Step.Path, or the
	// file a workspace program resolved to (Tree); "" when it did not
	// start.
	Path string
	// ExitCode is the target's exit status, or -1 when it died of a signal
	// or never ran.
	ExitCode int
	// Signal is the signal that killed the target, 0 if none.
	Signal int
	// KilledBy names the cap that killed the run ("wall", "cpu",
	// "memory", "pids", "disk", "output"), or "" if none did.
	KilledBy string
	// Wall is the target's wall-clock time, from Release to its end.
	Wall time.Duration
	// CPU is the CPU time of the whole tree.
	CPU time.Duration
	// PeakMemoryBytes is the group's peak memory, 0 when unknown.
	PeakMemoryBytes int64
	// Receipt names, per control, the mechanism that enforced it on this
	// run.
	Receipt map[string]string
	// InitDied is set when the sandbox's init died before the target
	// ended, killed neither by a cap nor by Kill: a crash, or a signal
	// from inside that got through. It says how, and means the sandbox's
	// integrity is not assured; airlock treats it as an escape signal
	// (docs/sandbox.md). ExitCode is then -1 and Signal 0: the target's
	// own status is unknown.
	InitDied string
	// FindingsSkipped lists the /findings entries that were left out of
	// the copy-out, or copied renamed or with their mode changed, each
	// with why (docs/sandbox.md, "Findings").
	FindingsSkipped []string
}

// requirementError is the error behind ErrRequirement: each missing
// mechanism with what was found instead.
type requirementError struct {
	Missing []string
	Why     map[string]string
}

// Error names each missing mechanism and what was found instead.
func (e *requirementError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		parts[i] = fmt.Sprintf("%s (%s)", m, e.Why[m])
	}
	return "sandbox: policy requires " + strings.Join(parts, ", ") + ": not available on this host for this user"
}

// Is makes errors.Is(err, ErrRequirement) true.
func (e *requirementError) Is(target error) bool {
	return target == ErrRequirement || target == limits.ErrUnavailable
}
