//go:build linux || darwin

package holder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/holder/step"
	"github.com/airlock-sandbox/airlock/internal/rawtext"
)

// Start runs a holder for cfg in the background and returns its Info once
// the session's sandbox is ready (every start-up probe passed): airlock
// is re-executed as cfg.Self + "watch", detached in its own session, and
// that watchdog runs the holder (Watch). A session id is minted when cfg
// has none. ctx bounds the wait; when it ends first, the holder is
// killed.
func Start(ctx context.Context, cfg Config) (Info, error) {
	if cfg.Session.ID == "" && cfg.Pool == nil {
		cfg.Session.ID = enforcer.NewSessionID()
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return Info{}, fmt.Errorf("holder: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		return Info{}, fmt.Errorf("holder: %w", err)
	}
	defer readyR.Close()
	cmd := &exec.Cmd{Path: selfExe(), Args: append(append([]string{argv0}, cfg.Self...), "watch"), Env: holderEnv(cfg), Dir: "/",
		Stdin: cfgR, Stdout: readyW, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	err = cmd.Start()
	cfgR.Close()
	readyW.Close()
	if err != nil {
		cfgW.Close()
		return Info{}, fmt.Errorf("holder: start: %w", err)
	}
	go func() {
		json.NewEncoder(cfgW).Encode(cfg)
		cfgW.Close()
	}()
	var msg ready
	var derr error
	decoded := make(chan struct{})
	go func() {
		derr = json.NewDecoder(io.LimitReader(readyR, 1<<20)).Decode(&msg)
		close(decoded)
	}()
	select {
	case <-decoded:
	case <-ctx.Done():
		// The holder is the watchdog's child: end it by its session,
		// which both are alone in.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-decoded
	}
	switch {
	case ctx.Err() != nil:
		cmd.Wait()
		return Info{}, fmt.Errorf("holder: start: %w", ctx.Err())
	case derr != nil:
		cmd.Wait()
		return Info{}, fmt.Errorf("holder: start: the holder ended before its session was ready: %w", derr)
	case msg.Error != "" || msg.Info == nil:
		cmd.Wait()
		return Info{}, errors.New(msg.Error)
	}
	go cmd.Wait() // the watchdog outlives a short-lived caller
	return *msg.Info, nil
}

// Client talks to one session's holder. Each call is one connection and
// one round trip.
type Client struct {
	id, path string
}

// Dial finds the holder of session id in the runtime directory dir. It
// refuses a socket that another user owns.
func Dial(dir, id string) (*Client, error) {
	if !enforcer.ValidSessionID(id) {
		return nil, fmt.Errorf("holder: %q is not a session id", id)
	}
	return dial(dir, id)
}

// dial is Dial of a valid id, or PoolID.
func dial(dir, id string) (*Client, error) {
	p := socketPath(dir, id)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("holder: session %s: %w (see airlock session list)", id, ErrNoSession)
	}
	if err != nil {
		return nil, fmt.Errorf("holder: session %s: %w", id, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("holder: session %s: %s is not a socket: refusing it", id, p)
	case !ok || int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("holder: session %s: %s is owned by another user: refusing it", id, p)
	}
	return &Client{id: id, path: p}, nil
}

// connect dials the holder and checks that it runs as this user.
func (c *Client) connect() (*net.UnixConn, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: c.path, Net: "unix"})
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("holder: session %s: its holder is gone: %w", c.id, ErrNoSession)
		}
		return nil, fmt.Errorf("holder: session %s: %w", c.id, err)
	}
	uid, err := peerUID(conn)
	if err != nil || uid != os.Geteuid() {
		conn.Close()
		return nil, fmt.Errorf("holder: session %s: its socket is served by uid %d, not this user: refusing it", c.id, uid)
	}
	return conn, nil
}

// roundTrip sends req with files and reads the answer.
func (c *Client) roundTrip(conn *net.UnixConn, req request, files ...*os.File) (response, error) {
	var resp response
	if err := writeMsg(conn, req, files...); err != nil {
		return resp, fmt.Errorf("holder: session %s: send: %w", c.id, err)
	}
	if _, err := readMsg(conn, &resp, maxResponse); err != nil {
		return resp, fmt.Errorf("holder: session %s: %w: %w", c.id, errNoAnswer, err)
	}
	if resp.ManifestFiles > 0 {
		if resp.Changes == nil {
			return resp, fmt.Errorf("holder: session %s: a manifest's files without its changes", c.id)
		}
		files, err := readManifest(conn, resp.ManifestFiles)
		resp.Changes.Files = files
		if err != nil {
			return resp, fmt.Errorf("holder: session %s: %w: %d of the manifest's %d files came: %w", c.id, ErrAnswerLost, len(files), resp.ManifestFiles, err)
		}
	}
	return resp, wireError(resp)
}

// call is roundTrip on a fresh connection.
func (c *Client) call(req request, files ...*os.File) (response, error) {
	conn, err := c.connect()
	if err != nil {
		return response{}, err
	}
	defer conn.Close()
	return c.roundTrip(conn, req, files...)
}

// Info asks the holder about its session.
func (c *Client) Info() (Info, error) {
	resp, err := c.call(request{Op: opInfo})
	switch {
	case err != nil:
		return Info{}, err
	case resp.Info == nil:
		return Info{}, errors.New("holder: no info in the answer")
	}
	return *resp.Info, nil
}

// Step runs one step in the session, as `airlock session exec` does
// (package holder/step): the step's streams relayed to and from stdin,
// stdout and stderr, its outcome told there as the request says, and its
// exit status returned. When ctx ends, the step is interrupted (at once,
// or after SIGTERM and r.Grace when ctx's cause is step.ErrTerminated)
// and its status still returned. An error under step.NotTaken says that
// nothing ran.
func (c *Client) Step(ctx context.Context, r step.Request, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	conn, err := c.connect()
	if err != nil {
		return 0, &step.NotTaken{Reason: err.Error()}
	}
	defer conn.Close()
	r.Session = c.id
	code, err := step.Exec(ctx, conn, r, stdin, stdout, stderr)
	if err != nil {
		return code, fmt.Errorf("holder: session %s: %w", c.id, err)
	}
	return code, nil
}

// Changes writes the session's patch to patch and returns its manifest.
// When the patch was written but its manifest did not all come, it
// returns what came and an error matching ErrAnswerLost.
func (c *Client) Changes(patch *os.File) (enforcer.Changes, error) {
	resp, err := c.call(request{Op: opChanges, Patch: true}, patch)
	switch {
	case errors.Is(err, ErrAnswerLost):
		return *resp.Changes, err
	case err != nil:
		return enforcer.Changes{}, err
	case resp.Changes == nil:
		return enforcer.Changes{}, errors.New("holder: no changes in the answer")
	}
	return *resp.Changes, nil
}

// Stop ends the session: its patch first, to patch when not nil, and its
// findings to findings when not nil (else where the start said). Its
// error is under ErrNoPatch when the patch could not be made, and under
// enforcer.ErrAudit when a record of the session (its teardown, its
// checkpoint) could not be written: the session was stopped all the same,
// and the summary says so (AuditError).
func (c *Client) Stop(findings *string, patch *os.File) (enforcer.SessionSummary, *enforcer.Changes, error) {
	req := request{Op: opStop, Findings: (*rawtext.String)(findings)}
	var files []*os.File
	if patch != nil {
		req.Patch, files = true, []*os.File{patch}
	}
	resp, err := c.call(req, files...)
	var sum enforcer.SessionSummary
	if resp.Summary != nil {
		sum = *resp.Summary
	}
	switch {
	case errors.Is(err, errNoAnswer) && c.gone():
		err = fmt.Errorf("%w: its session is gone, but what it made of it is unknown: %w", ErrAnswerLost, err)
	case err == nil && resp.Summary == nil:
		err = errors.New("holder: no summary in the answer")
	case resp.PatchError != "" && (err == nil || errors.Is(err, enforcer.ErrAudit)):
		err = errors.Join(err, fmt.Errorf("%w: %s", ErrNoPatch, resp.PatchError))
	}
	return sum, resp.Changes, err
}

// gone reports whether no holder serves the session any more.
func (c *Client) gone() bool {
	conn, err := c.connect()
	if err == nil {
		conn.Close()
	}
	return errors.Is(err, ErrNoSession) || errors.Is(err, fs.ErrNotExist)
}

// List returns the live sessions in the runtime directory dir, oldest
// first, and removes what dead holders left there (a socket whose lock is
// free).
func List(dir string) ([]Info, error) {
	socks, err := filepath.Glob(filepath.Join(dir, "*"+sockSuffix))
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, s := range socks {
		id := strings.TrimSuffix(filepath.Base(s), sockSuffix)
		if id == PoolID {
			continue
		}
		c, err := Dial(dir, id)
		if err == nil {
			var info Info
			if info, err = c.Info(); err == nil {
				out = append(out, info)
				continue
			}
		}
		sweepDead(dir, id)
	}
	slices.SortFunc(out, func(a, b Info) int { return a.Started.Compare(b.Started) })
	return out, nil
}

// sweepDead removes the socket and lock of session id when no holder
// holds the lock.
func sweepDead(dir, id string) {
	f, err := os.OpenFile(lockPath(dir, id), os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		defer f.Close()
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			return // alive, and busy or starting
		}
	}
	os.Remove(socketPath(dir, id))
	os.Remove(lockPath(dir, id))
}

// OpenPooled asks the pool holder in the runtime directory dir (one
// Start made with Config.Pool) to open session req on a sandbox it built
// ahead, deciding under the policy whose digest is policy (the pool's),
// and returns the session's Info; the session is then served on its own
// socket, as one a holder of its own holds. A session id is minted when
// req has none.
func OpenPooled(dir string, req enforcer.SessionRequest, policy string) (Info, error) {
	if req.ID == "" {
		req.ID = enforcer.NewSessionID()
	}
	return callPool(dir, request{Op: opOpen, Open: &openRequest{Session: toWireSession(req), Policy: policy}}, "no session in the answer")
}

// callPool sends r to the pool holder in dir and returns the Info it
// answers with; missing says what an answer without one lacks.
func callPool(dir string, r request, missing string) (Info, error) {
	c, err := dial(dir, PoolID)
	if err != nil {
		return Info{}, noPool(err)
	}
	resp, err := c.call(r)
	if err != nil {
		return Info{}, noPool(err)
	}
	if resp.Info == nil {
		return Info{}, errors.New("holder: pool: " + missing)
	}
	return *resp.Info, nil
}

// noPool is err, or, when it says there is no pool holder (no socket, or
// one that a dead holder left and its watchdog has not yet swept), so
// in words for whoever wanted a pool.
func noPool(err error) error {
	if errors.Is(err, ErrNoSession) {
		return errors.New("holder: no session pool is running (airlock session pool --size N starts one)")
	}
	return err
}

// StopPool stops the pool holder in dir: it closes every session it
// holds, tears down the sandboxes it built and removes its socket, then
// answers, so that StopPool returns once the pool is gone.
func StopPool(dir string) (Info, error) {
	return callPool(dir, request{Op: opStop}, "no answer to stop")
}
