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
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/monitor"
	"github.com/airlock-sandbox/airlock/policy"
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
		msg.Info = &h.info
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

// check refuses a config that cannot name a session.
func (c *Config) check() error {
	switch {
	case !enforcer.ValidSessionID(c.Session.ID):
		return fmt.Errorf("holder: session id %q: use 1 to 48 letters, digits, '.', '_' or '-'", c.Session.ID)
	case !filepath.IsAbs(c.Dir) || !filepath.IsAbs(c.Audit):
		return errors.New("holder: the runtime directory and the audit log must be absolute paths")
	}
	return checkDir(c.Dir, os.Geteuid())
}

// holder is a running holder: its session, listener and watchdog.
type holder struct {
	cfg   Config
	info  Info
	sess  *enforcer.Session
	log   *audit.Log
	lis   *net.UnixListener
	lock  *os.File
	conns sync.WaitGroup // connections being answered
}

// open takes the session's lock, opens the session and listens.
func open(cfg Config, adjust func(*enforcer.Options) error) (*holder, error) {
	h := &holder{cfg: cfg}
	lock, err := takeLock(lockPath(cfg.Dir, cfg.Session.ID))
	if err != nil {
		return nil, err
	}
	h.lock = lock
	fail := func(err error) (*holder, error) {
		h.shutdown()
		return nil, err
	}
	pol, err := policy.Parse(cfg.PolicyName, cfg.Policy)
	if err != nil {
		return fail(err)
	}
	logOpts := []audit.Option{audit.WithHook(monitor.New(monitor.ThresholdsFor(pol.Policy))), audit.WithCoalescing()}
	if cfg.Sign {
		// The session's end signs a checkpoint, as a run's does.
		signer, err := audit.LoadSigner(cfg.AuditKey)
		if err != nil {
			return fail(err)
		}
		logOpts = append(logOpts, audit.WithSigner(signer))
	}
	h.log, err = audit.Open(cfg.Audit, logOpts...)
	if err != nil {
		return fail(err)
	}
	opts := enforcer.Options{Hide: []string{cfg.Dir}}
	if adjust != nil {
		if err := adjust(&opts); err != nil {
			return fail(err)
		}
	}
	e, err := enforcer.New(pol, h.log, opts)
	if err != nil {
		return fail(err)
	}
	sock := socketPath(cfg.Dir, cfg.Session.ID)
	os.Remove(sock) // a dead holder's, whose lock we now hold
	h.lis, err = net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fail(fmt.Errorf("holder: listen: %w", err))
	}
	h.lis.SetUnlinkOnClose(false)
	if err := os.Chmod(sock, 0o600); err != nil {
		return fail(fmt.Errorf("holder: socket: %w", err))
	}
	h.sess, err = e.OpenSession(context.Background(), cfg.Session)
	if err != nil {
		return fail(err)
	}
	h.info = Info{ID: h.sess.ID(), Task: h.sess.Task(), Pid: os.Getpid(), Init: h.sess.Pid(), Watchdog: os.Getppid(),
		Started: h.sess.Started().UTC(), Policy: pol.Digest, Audit: cfg.Audit, Socket: sock}
	return h, nil
}

// serve answers clients until the session ends, then cleans up.
func (h *holder) serve() error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			h.sess.Close(context.Background())
		case <-h.sess.Done():
		}
		h.lis.Close() // ends the accept loop
	}()
	busy := make(chan struct{}, maxConns)
	for {
		c, err := h.lis.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			break
		}
		if err != nil {
			// Out of descriptors, for one: a moment later there may be
			// some again. Ending here would leave the session unserved.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case busy <- struct{}{}:
		default:
			c.Close() // past maxConns: a client that floods gets no more
			continue
		}
		h.conns.Go(func() {
			defer func() { <-busy }()
			h.handle(c)
		})
	}
	<-h.sess.Done()
	h.conns.Wait() // the answer to a stop, for one
	_, err := h.sess.Summary()
	h.shutdown()
	return err
}

// maxConns bounds the connections a holder answers at once, and
// requestTimeout how long a client may take to send its request: a
// client that opens connections and sends nothing holds none for long.
const (
	maxConns       = 64
	requestTimeout = 10 * time.Second
)

// handle answers one connection, from this user only.
func (h *holder) handle(c *net.UnixConn) {
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
	resp := h.answer(c, req, files)
	closeFiles(files)
	_ = writeMsg(c, resp)
}

// answer runs one request.
func (h *holder) answer(c *net.UnixConn, req request, files []*os.File) response {
	switch req.Op {
	case opInfo:
		info := h.info
		return response{Info: &info}
	case opExec:
		if req.Exec == nil || len(files) != 4 {
			return response{Error: "holder: exec: want a step and its four pipes"}
		}
		return h.exec(c, *req.Exec, files)
	case opChanges, opStop:
		var resp response
		if req.Patch {
			if len(files) != 1 {
				return response{Error: "holder: want one descriptor for the patch"}
			}
			resp = h.changes(files[0])
		}
		if req.Op == opStop {
			resp.PatchError, resp.Error = resp.Error, ""
			return h.stop(req, resp)
		}
		return resp
	}
	return response{Error: fmt.Sprintf("holder: unknown request %q", req.Op)}
}

// exec runs one step; the client's hanging up interrupts it.
func (h *holder) exec(c *net.UnixConn, x execRequest, files []*os.File) response {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		var b [1]byte
		c.Read(b[:]) // the client sends nothing more: this returns when it hangs up
		cancel()
	}()
	res, err := h.sess.Exec(ctx, enforcer.StepRequest{Tool: string(x.Tool), Command: string(x.Command), Args: x.Args, Env: x.Env,
		Cwd: string(x.Cwd), Timeout: msDuration(x.TimeoutMs), Approval: string(x.Approval), Stdin: files[0], Stdout: files[1], Stderr: files[2], Notices: files[3]})
	closeFiles(files) // the client's relays see the end of the output
	resp := response{Result: &res}
	if err != nil {
		resp.Error, resp.Ended = err.Error(), errors.Is(err, enforcer.ErrSessionEnded)
	}
	return resp
}

// changes writes the session's patch to f and returns its manifest.
func (h *holder) changes(f *os.File) response {
	ch, err := h.sess.Changes()
	if err != nil {
		return response{Error: err.Error(), Ended: errors.Is(err, enforcer.ErrSessionEnded)}
	}
	if _, err := f.Write(ch.Patch); err != nil {
		return response{Error: "holder: write the patch: " + err.Error()}
	}
	return response{Changes: &ch}
}

// stop ends the session, its findings going where the client says.
func (h *holder) stop(req request, resp response) response {
	if req.Findings != nil {
		if err := h.sess.SetFindings(string(*req.Findings)); err != nil {
			resp.Error = err.Error()
			return resp
		}
	}
	sum, err := h.sess.Close(context.Background())
	resp.Summary = &sum
	if err != nil && resp.Error == "" {
		resp.Error = err.Error()
	}
	return resp
}

// shutdown releases what the holder holds; the watchdog, seeing the
// socket and the lock gone, has nothing to sweep.
func (h *holder) shutdown() {
	if h.lis != nil {
		h.lis.Close()
	}
	os.Remove(socketPath(h.cfg.Dir, h.cfg.Session.ID))
	if h.log != nil {
		h.log.Close()
	}
	if h.lock != nil {
		os.Remove(h.lock.Name())
		h.lock.Close()
	}
}

// takeLock holds the session's lock file for the holder's life; another
// live holder of the same id holds it already.
func takeLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("holder: lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("holder: a session named %s is already held", filepath.Base(path[:len(path)-len(lockSuffix)]))
	}
	return f, nil
}
