package holes

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// Hole is a hole a start-up probe watches, with the probes it trips.
type Hole struct {
	// Name is the hole, as Open takes it.
	Name string
	// Probes are the probes that watch it: each must fail, and every
	// other probe must pass.
	Probes []string
	// Maybe are probes that may fail too on some hosts: with the host's
	// network namespace shared, the host's canary listener is reachable
	// unless Landlock (ABI 4 and later) refuses the connection.
	Maybe []string
}

// All lists every hole a start-up probe watches.
var All = []Hole{
	{Name: "uid", Probes: []string{"uid"}},
	{Name: "caps", Probes: []string{"caps"}},
	{Name: "no_new_privs", Probes: []string{"no_new_privs"}},
	{Name: "seccomp", Probes: []string{"seccomp"}},
	{Name: "landlock", Probes: []string{"landlock"}},
	{Name: "netns", Probes: []string{"interfaces", "routes"}, Maybe: []string{"canary_listener"}},
	{Name: "homes", Probes: []string{"host_dirs"}},
}

// Faults of the init's own, once it has forked the target and before it
// says so; no probe watches them. InitWrites writes a line on the init's
// stdout and panics (on its stderr): a test checks that none of it
// reaches the target's streams. InitStalls stops the init there for good:
// a test kills it from the host at that moment.
const (
	InitWrites = "init-writes"
	InitStalls = "init-stalls"
)

// Open makes every sandbox that t starts, until t ends, leave the named
// hole open. It sets an environment variable for the whole process, so t
// (and its parents) must not be parallel.
func Open(t testing.TB, name string) {
	t.Helper()
	t.Setenv(initproc.HoleEnv, name)
}

func init() {
	// skip replaces a control with its receipt.
	skip := func(key, receipt string) initproc.Replacement {
		return func(_ func() error, r map[string]string) error {
			r[key] = receipt
			return nil
		}
	}
	// The uid hole keeps uid and gid 0 of the user namespace (mapped to
	// the same host ids as 65534 would be).
	initproc.RegisterHole(&initproc.Hole{Name: "uid", Root: true})
	initproc.RegisterHole(&initproc.Hole{Name: "caps", Replace: map[string]initproc.Replacement{
		"caps": skip("capabilities", "kept: test hole"),
	}})
	// Landlock and the seccomp filter need no_new_privs or CAP_SYS_ADMIN,
	// so they are applied under CAP_SYS_ADMIN and the capabilities are
	// dropped last: only no_new_privs differs from a real drop.
	var dropCaps func() error
	initproc.RegisterHole(&initproc.Hole{Name: "no_new_privs", Replace: map[string]initproc.Replacement{
		"caps": func(drop func() error, _ map[string]string) error {
			dropCaps = drop
			return nil
		},
		"no_new_privs": skip("no_new_privs", "not set: test hole"),
		"seccomp": func(_ func() error, r map[string]string) error {
			if err := installSeccompKeepNNP(); err != nil {
				return fmt.Errorf("seccomp: %w", err)
			}
			r["seccomp"] = seccomp.Describe()
			return dropCaps()
		},
	}})
	initproc.RegisterHole(&initproc.Hole{Name: "seccomp", Replace: map[string]initproc.Replacement{
		"seccomp": skip("seccomp", "none: test hole"),
	}})
	initproc.RegisterHole(&initproc.Hole{Name: "landlock", Replace: map[string]initproc.Replacement{
		"landlock": skip("landlock", "none: test hole"),
	}})
	// The host's lo is up, and not the init's to change; the proxy
	// listener then lives on the host's loopback.
	initproc.RegisterHole(&initproc.Hole{Name: "netns", HostNetwork: true, Replace: map[string]initproc.Replacement{
		"network": skip("network", "the host's network namespace: test hole"),
	}})
	initproc.RegisterHole(&initproc.Hole{Name: "homes", HostDirs: []string{"/home", "/root"}})
	initproc.RegisterHole(&initproc.Hole{Name: InitWrites, Forked: func() {
		os.Stdout.WriteString("the init's own output (test hole)\n")
		panic("the init panics (test hole)")
	}})
	initproc.RegisterHole(&initproc.Hole{Name: InitStalls, Forked: func() {
		for {
			time.Sleep(time.Hour)
		}
	}})
}

// installSeccompKeepNNP installs airlock's filter (seccomp.Program) on
// every thread without setting no_new_privs, which seccomp.Install always
// sets: the caller must hold CAP_SYS_ADMIN.
func installSeccompKeepNNP() error {
	prog, err := seccomp.Program()
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("encode filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	switch {
	case errno != 0:
		return fmt.Errorf("install filter: %w", errno)
	case r != 0:
		return fmt.Errorf("install filter: thread %d could not take it", r)
	}
	return nil
}
