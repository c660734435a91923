//go:build linux || darwin

package holder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/canary"
	"github.com/airlock-sandbox/airlock/policy"
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
	if err := becomeReaper(); err != nil {
		ready.Close()
		return fmt.Errorf("holder: watchdog: %w", err)
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		ready.Close()
		return fmt.Errorf("holder: watchdog: %w", err)
	}
	cmd := &exec.Cmd{Path: selfExe(), Args: append(append([]string{argv0}, cfg.Self...), "hold"), Env: holderEnv(cfg), Dir: "/",
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
	waitHolder(cmd)
	if ids := heldBy(cfg, cmd.Process.Pid); len(ids) > 0 {
		cleanup(cfg, cmd.Process.Pid, ids)
	}
	return nil
}

// heldBy lists what the holder pid left, since it did not shut down: its
// session's socket or lock; for a pool holder, the pool's and those of
// every session whose lock names pid.
func heldBy(cfg Config, pid int) []string {
	left := func(id string) bool {
		for _, p := range []string{socketPath(cfg.Dir, id), lockPath(cfg.Dir, id)} {
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				return true
			}
		}
		return false
	}
	if cfg.Pool == nil {
		if left(cfg.Session.ID) {
			return []string{cfg.Session.ID}
		}
		return nil
	}
	var ids []string
	if left(PoolID) {
		ids = append(ids, PoolID)
	}
	locks, _ := filepath.Glob(filepath.Join(cfg.Dir, "*"+lockSuffix))
	for _, l := range locks {
		id := strings.TrimSuffix(filepath.Base(l), lockSuffix)
		if b, err := os.ReadFile(l); err == nil && id != PoolID && string(b) == strconv.Itoa(pid) {
			ids = append(ids, id)
		}
	}
	return ids
}

// cleanup removes what the dead holder pid left of ids and records the
// end of each session among them.
func cleanup(cfg Config, pid int, ids []string) {
	canary.Sweep()
	var ended []string
	for _, id := range ids {
		if f, err := os.OpenFile(lockPath(cfg.Dir, id), os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			held := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
			f.Close()
			if held {
				continue // a new holder of that id
			}
		}
		os.Remove(socketPath(cfg.Dir, id))
		os.Remove(lockPath(cfg.Dir, id))
		if id != PoolID {
			ended = append(ended, id)
		}
	}
	sweepSandboxes(pid, ended)
	if len(ended) == 0 {
		return
	}
	log, err := audit.Open(cfg.Audit)
	if err != nil {
		return
	}
	defer log.Close()
	for _, id := range ended {
		_, _ = log.Append(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo,
			Reason:  fmt.Sprintf("session %s ended: its holder (pid %d) died; %s", id, pid, tornDown),
			Context: audit.Context{RunID: id, Event: audit.EventSandboxTornDown}})
	}
}

// holderEnv is the environment of the watchdog and the holder of cfg:
// where the user's files are, and the variables its policy's credentials
// are read from, as airlock run reads them (the holder's proxy adds their
// values; no sandbox sees them). Nothing else of the caller's.
func holderEnv(cfg Config) []string {
	var creds []string
	if pol, err := policy.Parse(cfg.PolicyName, cfg.Policy); err == nil {
		creds = pol.CredentialEnv()
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "LANG", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CACHE_HOME", "GORACE", "GOCOVERDIR":
			env = append(env, kv)
		default:
			if slices.Contains(creds, k) {
				env = append(env, kv)
			}
		}
	}
	return env
}
