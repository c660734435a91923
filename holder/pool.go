//go:build linux || darwin

package holder

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/enforcer"
)

// pooled is a pool holder's pool: its socket, lock and the sessions it
// opened, which it holds until they end.
type pooled struct {
	info Info
	p    *enforcer.Pool
	socket

	mu     sync.Mutex
	held   map[*held]bool
	closed bool
	wg     sync.WaitGroup  // the sessions' serve loops
	stops  []*net.UnixConn // the stop requests, answered once the pool is down
}

// openPool starts the pool (its sandboxes are built in the background)
// and listens on the pool's socket.
func (h *holder) openPool() (*pooled, error) {
	spec := h.cfg.Pool
	pl := &pooled{held: map[*held]bool{}}
	err := pl.bind(h.cfg.Dir, PoolID)
	if errors.Is(err, errHeld) {
		return nil, errors.New("holder: a session pool is running already (airlock session pool --stop ends it)")
	}
	if err == nil {
		pl.p, err = h.e.NewPool(context.Background(), enforcer.PoolRequest{Size: spec.Size, Task: spec.Task, Image: spec.Image, ImageCache: spec.ImageCache})
	}
	if err == nil {
		err = waitBuilt(pl.p, spec.Size)
	}
	if err != nil {
		pl.close()
		return nil, fmt.Errorf("holder: pool: %w", err)
	}
	pl.info = Info{ID: PoolID, Task: spec.Task, Pid: os.Getpid(), Watchdog: os.Getppid(), Policy: h.digest, Audit: h.cfg.Audit, Socket: pl.lis.Addr().String()}
	return pl, nil
}

// servePool answers the pool's clients until it is stopped (opStop on
// its socket, or SIGTERM, SIGINT or SIGHUP), then closes every session it
// holds and the pool, and only then answers the stop requests: whoever
// asked finds the pool gone, its socket and sandboxes with it.
func (h *holder) servePool() error {
	pl := h.pool
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sig)
	go func() {
		<-sig
		pl.lis.Close()
	}()
	var conns sync.WaitGroup
	accept(pl.lis, &conns, h.handlePool)
	conns.Wait()
	pl.mu.Lock()
	pl.closed = true
	sessions := make([]*held, 0, len(pl.held))
	for hd := range pl.held {
		sessions = append(sessions, hd)
	}
	pl.mu.Unlock()
	for _, hd := range sessions {
		hd.sess.Close(context.Background())
	}
	pl.wg.Wait()
	pl.p.Close()
	pl.close()
	h.shutdown()
	info := pl.info
	for _, c := range pl.stops {
		_ = writeMsg(c, response{Info: &info})
		c.Close()
	}
	return nil
}

// handlePool answers one connection to the pool's socket, from this user
// only: info, open a session, or stop.
func (h *holder) handlePool(c *net.UnixConn) {
	pl := h.pool
	if uid, err := peerUID(c); err != nil || uid != os.Geteuid() {
		c.Close()
		return
	}
	var req request
	c.SetReadDeadline(time.Now().Add(requestTimeout))
	files, err := readMsg(c, &req, maxRequest)
	closeFiles(files)
	if err == nil && req.Op == opStop {
		pl.mu.Lock()
		pl.stops = append(pl.stops, c) // servePool answers it once the pool is down
		pl.mu.Unlock()
		pl.lis.Close() // ends the accept loop; the sessions are closed then
		return
	}
	defer c.Close()
	if err != nil {
		return
	}
	var resp response
	switch {
	case req.Op == opInfo:
		info := pl.info
		info.Ready = pl.p.Ready()
		resp.Info = &info
	case req.Op == opOpen && req.Open != nil:
		resp = h.openPooled(*req.Open)
	default:
		resp.Error = fmt.Sprintf("holder: pool: unknown request %q", req.Op)
	}
	_ = writeMsg(c, resp)
}

// openPooled opens a session on one of the pool's sandboxes and serves it
// on its own socket, as a holder of one session does.
func (h *holder) openPooled(x openRequest) response {
	pl, sreq := h.pool, x.Session.request()
	switch {
	case x.Policy != h.digest:
		return response{Error: fmt.Sprintf("holder: pool: it decides under policy %s, not %s: start a pool for that policy, or a session of its own", h.digest, x.Policy)}
	case !enforcer.ValidSessionID(sreq.ID):
		return response{Error: fmt.Sprintf("holder: pool: session id %q: use 1 to 48 letters, digits, '.', '_' or '-'", sreq.ID)}
	}
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		return response{Error: "holder: pool: it is stopping"}
	}
	pl.wg.Add(1)
	pl.mu.Unlock()
	hd, err := h.hold(context.Background(), sreq, pl.p)
	if err != nil {
		pl.wg.Done()
		return response{Error: err.Error()}
	}
	pl.mu.Lock()
	pl.held[hd] = true
	pl.mu.Unlock()
	go func() {
		defer pl.wg.Done()
		hd.serve()
		pl.mu.Lock()
		delete(pl.held, hd)
		pl.mu.Unlock()
	}()
	info := hd.info
	return response{Info: &info}
}

// waitBuilt waits until p has its n sandboxes built: the pool is ready
// when it can serve n sessions at once. A failed build fails it (the
// host lacks what the policy requires, say).
func waitBuilt(p *enforcer.Pool, n int) error {
	for deadline := time.Now().Add(poolStartTimeout); p.Ready() < n; time.Sleep(2 * time.Millisecond) {
		if err := p.Err(); err != nil {
			p.Close()
			return err
		}
		if time.Now().After(deadline) {
			p.Close()
			return fmt.Errorf("its sandboxes were not built in %v", poolStartTimeout)
		}
	}
	return nil
}

// poolStartTimeout bounds a pool's first builds.
const poolStartTimeout = time.Minute
