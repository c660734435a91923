//go:build linux || darwin

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
	"github.com/airlock-sandbox/airlock/holder/step"
	"github.com/airlock-sandbox/airlock/internal/termtext"
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
func Hold(in io.Reader, out io.WriteCloser, adjust func(*enforcer.Options) error) error {
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
	one    *held // the session of a holder that holds one
	pool   *pooled
}

// held is one session a holder holds: its socket's listener, its lock and
// the connections being answered.
type held struct {
	h    *holder
	info Info
	sess *enforcer.Session
	socket
	conns sync.WaitGroup
	once  sync.Once // shutdown's: the socket and lock it removes may be another holder's after
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
	fail := func(err error) (*held, error) {
		hd.shutdown()
		return nil, err
	}
	err := hd.bind(h.cfg.Dir, req.ID)
	if err != nil {
		return fail(err)
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
		Started: hd.sess.Started().UTC(), Policy: h.digest, Audit: h.cfg.Audit, Socket: hd.lis.Addr().String(), BuiltAhead: hd.sess.BuiltAhead()}
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
	if uid, err := peerUID(c); err != nil || uid != os.Geteuid() {
		return // another user: not a word
	}
	var req request
	c.SetReadDeadline(time.Now().Add(requestTimeout))
	files, err := readMsg(c, &req, maxRequest)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{}) // a step reads the client's hang-up
	if req.Op == opStep {
		hd.step(c, req.Step, files)
		return
	}
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
// the step gets SIGTERM and grace before it is killed), or when cancel is
// called.
func untilHangUp(c *net.UnixConn, grace time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		var r request
		files, err := readMsg(c, &r, 1<<10) // returns when the client terminates or hangs up
		closeFiles(files)
		if err == nil && r.Op == opTerminate {
			cancel(&sandbox.Terminated{Signal: syscall.SIGTERM, Grace: max(grace, 0)})
			return
		}
		cancel(nil)
	}()
	return ctx, func() { cancel(nil) }
}

// step runs one step of a client's (package holder/step) on the
// session and tells its outcome on the client's pipes, as `airlock run`
// tells a run's: the child's output, escaped where the client's stream
// is a terminal, or captured; the result object; the stderr line. It
// answers twice: that it took the step, then, once every pipe is closed,
// its exit status. The client's hanging up interrupts the step.
func (hd *held) step(c *net.UnixConn, r *step.Request, files []*os.File) {
	defer closeFiles(files)
	var why error
	switch {
	case r == nil || len(files) != 3 || len(r.Argv) == 0:
		why = errors.New("want a step and its three pipes")
	case r.Session != hd.info.ID:
		why = errors.New("not this holder's session")
	default:
		why = kindsAre(files, "a pipe", unix.S_IFIFO)
	}
	if why != nil {
		writeMsg(c, step.Answer{Error: "holder: step: " + why.Error()})
		return
	}
	// Taken: the client starts relaying its stdin now (until this, it may
	// still run the step some other way).
	if writeMsg(c, step.Answer{Accepted: true}) != nil {
		return
	}
	ctx, cancel := untilHangUp(c, r.Grace)
	defer cancel()
	out := enforcer.Report{JSON: r.JSON, Result: r.Result, Quiet: r.Quiet}
	stdout, stderr := termtext.NewWriter(files[1]), termtext.NewWriter(files[2]) // airlock's own
	st := enforcer.StepRequest{Tool: r.Tool, Command: r.Argv[0], Args: r.Argv[1:], Env: r.Env, Cwd: r.Cwd, Timeout: r.Timeout,
		Approval: r.Approval, Stdin: files[0], Stdout: childOutput(files[1], r.StdoutTerminal),
		Stderr: childOutput(files[2], r.StderrTerminal), Notices: out.Notices(stderr)}
	capture := out.Capture(&st.Stdout, &st.Stderr)
	res, err := hd.sess.Exec(ctx, st)
	flush(st.Stdout, st.Stderr)
	capture(&res)
	if err != nil && !enforcer.CouldNotRun(res.ExitCode) {
		err = nil // a result that says what happened: not airlock's failure
	}
	code := out.Tell(stdout, stderr, res, err)
	flush(stdout, stderr)
	closeFiles(files) // the client has all of the output when it has the status
	writeMsg(c, step.Answer{Accepted: true, ExitCode: code})
}

// childOutput is where a child's output stream goes on its way to the
// client's f: escaped when f ends on a terminal (the contained code
// cannot drive it), else byte for byte.
func childOutput(f *os.File, terminal bool) io.Writer {
	if terminal {
		return termtext.NewWriter(f)
	}
	return f
}

// flush writes out what the termtext Writers among ws kept back.
func flush(ws ...io.Writer) {
	for _, w := range ws {
		if t, ok := w.(*termtext.Writer); ok {
			_ = t.Flush()
		}
	}
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
	hd.shutdown() // before the answer: whoever asked may start the id again at once
	return resp
}

// shutdown releases the session's socket and lock, once; the watchdog,
// seeing them gone, has nothing to sweep.
func (hd *held) shutdown() {
	hd.once.Do(hd.socket.close)
}

// socket is a holder's socket, a session's or the pool's, and the lock
// under which the holder serves it.
type socket struct {
	lis  *net.UnixListener
	lock *os.File
}

// bind takes id's lock in the runtime directory dir, then listens on
// id's socket there, mode 0600 (a dead holder's, whose lock it now
// holds, removed first). What it took stays for close, on error too.
func (s *socket) bind(dir, id string) error {
	lock, err := takeLock(lockPath(dir, id))
	if err != nil {
		return err
	}
	s.lock = lock
	sock := socketPath(dir, id)
	os.Remove(sock)
	if s.lis, err = listen(sock); err != nil {
		return err
	}
	s.lis.SetUnlinkOnClose(false)
	if err := os.Chmod(sock, 0o600); err != nil {
		return fmt.Errorf("holder: socket: %w", err)
	}
	return nil
}

// close closes the listener and removes the socket, then the lock.
func (s *socket) close() {
	if s.lis != nil {
		s.lis.Close()
		os.Remove(s.lis.Addr().String())
	}
	if s.lock != nil {
		os.Remove(s.lock.Name())
		s.lock.Close()
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
