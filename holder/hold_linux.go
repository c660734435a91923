package holder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// Hold is the holder process: it reads its Config from in, opens the
// session, listens on the session's socket, says so on out (Start waits
// for it), and serves clients until the session ends — stopped, its wall
// clock or idle timeout passed, or the holder was sent SIGTERM, SIGINT or
// SIGHUP. adjust, when not nil, completes the Enforcer's options (the
// approval path).
//
// cli, when not nil, runs a quick client's command line (opCLI).
func Hold(in io.Reader, out io.WriteCloser, adjust func(*enforcer.Options) error, cli CLIFunc) error {
	var cfg Config
	err := json.NewDecoder(io.LimitReader(in, maxConfig)).Decode(&cfg)
	if err == nil {
		err = cfg.check()
	}
	var h *holder
	if err == nil {
		h, err = open(cfg, adjust)
	}
	msg := ready{}
	if err != nil {
		msg.Error = err.Error()
	} else {
		h.cli = cli
		info := h.info()
		msg.Info = &info
	}
	werr := json.NewEncoder(out).Encode(msg)
	out.Close()
	if err != nil {
		return err
	}
	if werr != nil {
		h.shutdown()
		return werr
	}
	return h.serve()
}

// check refuses a config that cannot name a session (or, for a pool, is
// not one).
func (c *Config) check() error {
	switch {
	case c.Pool != nil && (c.Pool.Size < 1 || c.Pool.Size > enforcer.MaxPool):
		return fmt.Errorf("holder: pool size %d: want 1 to %d", c.Pool.Size, enforcer.MaxPool)
	case c.Pool == nil && !enforcer.ValidSessionID(c.Session.ID):
		return fmt.Errorf("holder: session id %q: use 1 to 48 letters, digits, '.', '_' or '-'", c.Session.ID)
	case !filepath.IsAbs(c.Dir) || !filepath.IsAbs(c.Audit):
		return errors.New("holder: the runtime directory and the audit log must be absolute paths")
	}
	return checkDir(c.Dir, os.Geteuid())
}

// holder is a running holder process: its audit log and Enforcer, and
// either the one session it holds or, for a pool holder, the pool it
// opens sessions from and every session it holds.
type holder struct {
	cfg    Config
	digest string // the policy's
	log    *audit.Log
	e      *enforcer.Enforcer
	cli    CLIFunc
	one    *held // the session of a holder that holds one
	pool   *pooled
}

// held is one session a holder holds: its socket's listener, its lock and
// the connections being answered.
type held struct {
	h     *holder
	info  Info
	sess  *enforcer.Session
	lis   *net.UnixListener
	lock  *os.File
	conns sync.WaitGroup
}

// open opens the holder's audit log and Enforcer, then its session, or
// its pool and the pool's socket.
func open(cfg Config, adjust func(*enforcer.Options) error) (*holder, error) {
	h := &holder{cfg: cfg}
	pol, err := policy.Parse(cfg.PolicyName, cfg.Policy)
	if err != nil {
		return nil, err
	}
	logOpts := []audit.Option{audit.WithHook(monitor.New(monitor.ThresholdsFor(pol.Policy))), audit.WithCoalescing()}
	if cfg.Sign {
		// The session's end signs a checkpoint, as a run's does.
		signer, err := audit.LoadSigner(cfg.AuditKey)
		if err != nil {
			return nil, err
		}
		logOpts = append(logOpts, audit.WithSigner(signer))
	}
	h.digest = pol.Digest
	h.log, err = audit.Open(cfg.Audit, logOpts...)
	if err != nil {
		return nil, err
	}
	opts := enforcer.Options{Hide: []string{cfg.Dir}}
	if adjust != nil {
		if err := adjust(&opts); err != nil {
			h.log.Close()
			return nil, err
		}
	}
	if h.e, err = enforcer.New(pol, h.log, opts); err != nil {
		h.log.Close()
		return nil, err
	}
	if cfg.Pool != nil {
		if h.pool, err = h.openPool(); err != nil {
			h.log.Close()
			return nil, err
		}
		return h, nil
	}
	if h.one, err = h.hold(context.Background(), cfg.Session, nil); err != nil {
		h.log.Close()
		return nil, err
	}
	return h, nil
}

// hold takes session req's lock, listens on its socket and opens it (on
// the pool's sandboxes, with one).
func (h *holder) hold(ctx context.Context, req enforcer.SessionRequest, p *enforcer.Pool) (*held, error) {
	hd := &held{h: h}
	lock, err := takeLock(lockPath(h.cfg.Dir, req.ID))
	if err != nil {
		return nil, err
	}
	hd.lock = lock
	fail := func(err error) (*held, error) {
		hd.shutdown()
		return nil, err
	}
	sock := socketPath(h.cfg.Dir, req.ID)
	os.Remove(sock) // a dead holder's, whose lock we now hold
	hd.lis, err = listen(sock)
	if err != nil {
		return fail(err)
	}
	hd.lis.SetUnlinkOnClose(false)
	if err := os.Chmod(sock, 0o600); err != nil {
		return fail(fmt.Errorf("holder: socket: %w", err))
	}
	if p != nil {
		hd.sess, err = p.OpenSession(ctx, req)
	} else {
		hd.sess, err = h.e.OpenSession(ctx, req)
	}
	if err != nil {
		return fail(err)
	}
	hd.info = Info{ID: hd.sess.ID(), Task: hd.sess.Task(), Pid: os.Getpid(), Init: hd.sess.Pid(), Watchdog: os.Getppid(),
		Started: hd.sess.Started().UTC(), Policy: h.digest, Audit: h.cfg.Audit, Socket: sock, BuiltAhead: hd.sess.BuiltAhead()}
	return hd, nil
}

// serve answers clients until the session (or, for a pool holder, the
// pool and every session it holds) ends, then cleans up.
func (h *holder) serve() error {
	if h.pool != nil {
		return h.servePool()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			h.one.sess.Close(context.Background())
		case <-h.one.sess.Done():
		}
	}()
	err := h.one.serve()
	h.shutdown()
	return err
}

// serve answers the session's clients until it ends, then releases its
// socket and lock.
func (hd *held) serve() error {
	go func() {
		<-hd.sess.Done()
		hd.lis.Close() // ends the accept loop
	}()
	accept(hd.lis, &hd.conns, hd.handle)
	<-hd.sess.Done()
	hd.conns.Wait() // the answer to a stop, for one
	_, err := hd.sess.Summary()
	hd.shutdown()
	return err
}

// maxConns bounds the connections a holder answers at once, and
// requestTimeout how long a client may take to send its request: a
// client that opens connections and sends nothing holds none for long.
const (
	maxConns       = 64
	requestTimeout = 10 * time.Second
)

// accept answers lis's connections with handle, at most maxConns at
// once, until lis is closed. Past maxConns it accepts no more until one
// ends: the rest wait in the kernel's backlog, holding none of the
// holder's descriptors, and a client that asks properly just after a
// flood of idle ones is answered, not reset while the flood's handlers
// are still noticing their hang-ups.
func accept(lis *net.UnixListener, conns *sync.WaitGroup, handle func(*net.UnixConn)) {
	busy := make(chan struct{}, maxConns)
	for {
		busy <- struct{}{}
		c, err := lis.AcceptUnix()
		if err != nil {
			<-busy
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, for one: a moment later there may be
			// some again. Ending here would leave the session unserved.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		conns.Go(func() {
			defer func() { <-busy }()
			handle(c)
		})
	}
}

// handle answers one connection, from this user only.
func (hd *held) handle(c *net.UnixConn) {
	defer c.Close()
	if uid, _, err := peerUID(c); err != nil || uid != os.Geteuid() {
		return // another user: not a word
	}
	var req request
	c.SetReadDeadline(time.Now().Add(requestTimeout))
	files, err := readMsg(c, &req, maxRequest)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{}) // an exec reads the client's hang-up
	resp := hd.answer(c, req, files)
	closeFiles(files)
	var manifest []changes.FileChange
	if resp.Changes != nil {
		ch := *resp.Changes
		manifest, ch.Files, resp.Changes = ch.Files, nil, &ch
		resp.ManifestFiles = len(manifest)
	}
	if writeMsg(c, resp) == nil && len(manifest) > 0 {
		_ = writeManifest(c, manifest)
	}
}

// answer runs one request.
func (hd *held) answer(c *net.UnixConn, req request, files []*os.File) response {
	switch req.Op {
	case opInfo:
		info := hd.info
		return response{Info: &info}
	case opExec:
		if req.Exec == nil || len(files) != 4 {
			return response{Error: "holder: exec: want a step and its four pipes"}
		}
		if err := kindsAre(files, "a pipe", unix.S_IFIFO); err != nil {
			return response{Error: "holder: exec: " + err.Error()}
		}
		return hd.exec(c, *req.Exec, files)
	case opCLI:
		if req.CLI == nil || len(files) != 3 || hd.h.cli == nil {
			return response{Error: "holder: cli: want a command line and its three pipes, from an airlock that runs them"}
		}
		if err := kindsAre(files, "a pipe", unix.S_IFIFO); err != nil {
			return response{Error: "holder: cli: " + err.Error()}
		}
		return hd.runCLI(c, *req.CLI, files)
	case opChanges, opStop:
		var resp response
		if req.Patch {
			if len(files) != 1 {
				return response{Error: "holder: want one descriptor for the patch"}
			}
			if err := kindsAre(files, "a file, a pipe or a socket (for the patch)", unix.S_IFREG, unix.S_IFIFO, unix.S_IFSOCK); err != nil {
				return response{Error: err.Error()}
			}
			resp = hd.changes(files[0])
		}
		if req.Op == opStop {
			resp.PatchError, resp.Error = resp.Error, ""
			return hd.stop(req, resp)
		}
		return resp
	}
	return response{Error: fmt.Sprintf("holder: unknown request %q", req.Op)}
}

// untilHangUp returns a context that ends when the client at c hangs up
// (it sends nothing after its request but, when it was sent SIGTERM, an
// opTerminate: the context's cause is then a sandbox.Terminated, so that
// the step gets SIGTERM and the grace period before it is killed), or
// when cancel is called.
func untilHangUp(c *net.UnixConn) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		var r request
		files, err := readMsg(c, &r, 1<<10) // returns when the client terminates or hangs up
		closeFiles(files)
		if err == nil && r.Op == opTerminate {
			cancel(&sandbox.Terminated{Signal: syscall.SIGTERM, Grace: msDuration(max(r.GraceMs, 0))})
			return
		}
		cancel(nil)
	}()
	return ctx, func() { cancel(nil) }
}

// exec runs one step; the client's hanging up interrupts it, at once, or
// after SIGTERM and a grace period when an opTerminate came first.
func (hd *held) exec(c *net.UnixConn, x execRequest, files []*os.File) response {
	ctx, cancel := untilHangUp(c)
	defer cancel()
	res, err := hd.sess.Exec(ctx, enforcer.StepRequest{Tool: string(x.Tool), Command: string(x.Command), Args: x.Args, Env: x.Env,
		Cwd: string(x.Cwd), Timeout: msDuration(x.TimeoutMs), Approval: string(x.Approval), Stdin: files[0], Stdout: files[1], Stderr: files[2], Notices: files[3]})
	closeFiles(files) // the client's relays see the end of the output
	resp := response{Result: &res}
	resp.fail(err)
	return resp
}

// runCLI runs a quick client's command line; the client's hanging up
// interrupts it. Its output goes to the pipes, which are closed before
// the answer, so that the client has all of it when it has the status.
func (hd *held) runCLI(c *net.UnixConn, x cliRequest, files []*os.File) response {
	ctx, cancel := untilHangUp(c)
	defer cancel()
	args := strs(x.Args)
	if len(args) == 0 || args[0] != hd.info.ID {
		return response{Error: "holder: cli: not this holder's session"}
	}
	// Taken: the client starts relaying its stdin now (until this, it may
	// still run the command line itself).
	if err := writeMsg(c, response{Accepted: true}); err != nil {
		closeFiles(files)
		return response{Error: "holder: cli: " + err.Error()}
	}
	code := hd.h.cli(ctx, CLI{Args: args, Env: strs(x.Env), Dir: string(x.Dir),
		Stdin: files[0], Stdout: files[1], Stderr: files[2], Exec: func(ctx context.Context, st enforcer.StepRequest) (enforcer.Result, error) {
			return answered(hd.sess.Exec(ctx, st))
		}})
	closeFiles(files)
	return response{ExitCode: &code}
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// changes writes the session's patch to f and returns its manifest.
func (hd *held) changes(f *os.File) response {
	ch, err := hd.sess.Changes()
	if err != nil {
		var resp response
		resp.fail(err)
		return resp
	}
	if _, err := f.Write(ch.Patch); err != nil {
		return response{Error: "holder: write the patch: " + err.Error()}
	}
	return response{Changes: &ch}
}

// stop ends the session, its findings going where the client says.
func (hd *held) stop(req request, resp response) response {
	if req.Findings != nil {
		if err := hd.sess.SetFindings(string(*req.Findings)); err != nil {
			resp.Error = err.Error()
			return resp
		}
	}
	sum, err := hd.sess.Close(context.Background())
	if resp.Error == "" {
		resp.fail(err)
	}
	resp.Summary = &sum
	return resp
}

// shutdown releases the session's socket and lock; the watchdog, seeing
// them gone, has nothing to sweep.
func (hd *held) shutdown() {
	if hd.lis != nil {
		hd.lis.Close()
		os.Remove(hd.lis.Addr().String())
	}
	if hd.lock != nil {
		os.Remove(hd.lock.Name())
		hd.lock.Close()
	}
}

// shutdown releases what the holder process holds.
func (h *holder) shutdown() {
	if h.one != nil {
		h.one.shutdown()
	}
	if h.log != nil {
		h.log.Close()
	}
}

// takeLock holds the session's lock file for the holder's life; another
// live holder of the same id holds it already. The lock holds the
// holder's pid, so that a pool holder's watchdog knows its sessions.
func takeLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("holder: lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("holder: a session named %s is %w", filepath.Base(path[:len(path)-len(lockSuffix)]), errHeld)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
	return f, nil
}

// errHeld is takeLock's error when another live holder holds the lock.
var errHeld = errors.New("already held")

// info is what Start's caller learns: the session's, or the pool's.
func (h *holder) info() Info {
	if h.one != nil {
		return h.one.info
	}
	return h.pool.info
}

// maxSocketPath is the longest path a unix socket may have (108 bytes
// with its NUL).
const maxSocketPath = 107

// listen listens on the unix socket sock, or says why a path too long
// for one will not do, and how to fix it.
func listen(sock string) (*net.UnixListener, error) {
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("holder: listen: the socket's path %s is %d bytes long, longer than a unix socket's may be (%d): "+
			"set XDG_RUNTIME_DIR to a shorter directory of yours that no one else may enter, or give a shorter --id", sock, len(sock), maxSocketPath)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("holder: listen: %w", err)
	}
	return l, nil
}
