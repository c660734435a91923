package holder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/runbook"
)

// argv0 is the name the watchdog and the holder run under.
const argv0 = "airlock"

// Watch is the watchdog process that Start runs: it reads the holder's
// Config from in, becomes a child subreaper, runs the holder (Self +
// "hold") as its child with ready as the holder's stdout (Start reads
// the holder's ready message there), and waits for it. When the holder
// dies without shutting down (kill -9), its sandbox dies with it (the
// sandbox init's parent-death signal) and is reaped here, and the
// watchdog removes what is left — the session's cgroups and probe canary
// (whose owner locks died with the holder), its socket and lock — and
// records the teardown in the audit stream. Descriptors it inherited
// from the caller beyond its stdio are closed first.
func Watch(in io.Reader, ready *os.File) error {
	closeInherited()
	var cfg Config
	if err := json.NewDecoder(io.LimitReader(in, maxConfig)).Decode(&cfg); err != nil {
		ready.Close()
		return fmt.Errorf("holder: watchdog: %w", err)
	}
	// The holder's orphans (its sandbox's init) become ours, to reap.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		ready.Close()
		return fmt.Errorf("holder: watchdog: subreaper: %w", err)
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		ready.Close()
		return fmt.Errorf("holder: watchdog: %w", err)
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: append(append([]string{argv0}, cfg.Self...), "hold"), Env: holderEnv(), Dir: "/",
		Stdin: cfgR, Stdout: ready}
	err = cmd.Start()
	cfgR.Close()
	ready.Close() // the holder has it; Start sees its end when the holder's ends
	if err != nil {
		cfgW.Close()
		return fmt.Errorf("holder: watchdog: start the holder: %w", err)
	}
	json.NewEncoder(cfgW).Encode(cfg)
	cfgW.Close()
	cmd.Wait()
	reapOrphans(5 * time.Second)
	if left(cfg) {
		cleanup(cfg, cmd.Process.Pid)
	}
	return nil
}

// reapOrphans waits for the children the holder left to this subreaper
// (its sandbox's init, killed by its parent-death signal), for at most d.
func reapOrphans(d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return
		case err == nil && pid > 0:
			continue
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// left reports whether the holder left its socket or lock: it did not
// shut down.
func left(cfg Config) bool {
	for _, p := range []string{socketPath(cfg.Dir, cfg.Session.ID), lockPath(cfg.Dir, cfg.Session.ID)} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// cleanup removes what a dead holder left and records its end.
func cleanup(cfg Config, pid int) {
	limits.SweepStale()
	runbook.SweepCanaries()
	id := cfg.Session.ID
	if f, err := os.OpenFile(lockPath(cfg.Dir, id), os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		held := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
		f.Close()
		if held {
			return // a new holder of that id
		}
	}
	os.Remove(socketPath(cfg.Dir, id))
	os.Remove(lockPath(cfg.Dir, id))
	log, err := audit.Open(cfg.Audit)
	if err != nil {
		return
	}
	defer log.Close()
	_, _ = log.Append(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo,
		Reason:  fmt.Sprintf("session %s ended: its holder (pid %d) died; its sandbox died with it, and the watchdog removed its cgroups, probe canary and socket", id, pid),
		Context: audit.Context{RunID: id, Event: audit.EventSandboxTornDown}})
}

// holderEnv is the environment of the watchdog and the holder: where the
// user's files are, and nothing else of the caller's.
func holderEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "LANG", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CACHE_HOME", "GORACE", "GOCOVERDIR":
			env = append(env, kv)
		}
	}
	return env
}
