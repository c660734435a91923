package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// client is one MCP session: its id, and the sandbox session its calls run
// in, opened at its first call and again after the last one ended.
type client struct {
	srv  *Server
	id   string // "mcp-" and 12 hex digits: the audit records' details.session
	name string // the client's own name and version, as it said them

	mu      sync.Mutex // held while a sandbox session opens or closes
	sess    *enforcer.Session
	opened  int    // sandbox sessions opened so far
	note    string // why the last sandbox session ended, for the next call's result
	escaped string // set once a sandbox session ended on an escape signal: nothing more runs
	gone    bool   // the client went: nothing more runs
	active  int    // calls in flight
	idle    *time.Timer
}

// errGone is the error of a call whose client has gone, or whose server
// is shutting down.
var errGone = errors.New("mcpserver: the MCP session has ended")

// client returns the client of MCP session ss, made at its first call;
// when the session ends its sandbox session is closed.
func (s *Server) client(ss *mcp.ServerSession) (*client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errGone
	}
	if c := s.clients[ss]; c != nil {
		return c, nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	c := &client{srv: s, id: "mcp-" + hex.EncodeToString(b[:]), name: "an unnamed client"}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		// The client chose it: kept short and printable for the
		// records and notices it goes into.
		c.name = strconv.Quote(termtext.Clip(p.ClientInfo.Name+" "+p.ClientInfo.Version, 64))
	}
	c.idle = time.AfterFunc(math.MaxInt64, c.idleClose)
	s.clients[ss] = c
	s.wg.Go(func() {
		_ = ss.Wait()
		c.drop("the client disconnected")
		s.mu.Lock()
		delete(s.clients, ss)
		s.mu.Unlock()
	})
	return c, nil
}

// begin and end bracket a call; the idle timer runs while none is in
// flight.
func (c *client) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active++
	c.idle.Stop()
}

func (c *client) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active--; c.active == 0 && c.sess != nil && !c.gone {
		c.idle.Reset(c.srv.idle)
	}
}

// sandbox returns the client's live sandbox session, opening one when it
// has none, and the note on why its last one ended, once. After an escape
// signal, or once the client has gone, it opens none.
func (c *client) sandbox(ctx context.Context) (*enforcer.Session, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		select {
		case <-c.sess.Done():
			c.ended(c.sess)
		default:
			return c.sess, "", nil
		}
	}
	switch {
	case c.gone:
		return nil, "", errGone
	case c.escaped != "":
		return nil, "", fmt.Errorf("mcpserver: this MCP session runs nothing more: %s", c.escaped)
	}
	c.opened++
	id := c.id
	if c.opened > 1 {
		id += "." + strconv.Itoa(c.opened)
	}
	cfg := c.srv.cfg
	req := enforcer.SessionRequest{ID: id, Task: cfg.Task, Workspace: cfg.Workspace, Details: map[string]string{"session": c.id}}
	if cfg.Findings != "" {
		req.Findings = filepath.Join(cfg.Findings, id)
	}
	if err := c.srv.reserve(); err != nil {
		return nil, "", err
	}
	open := c.srv.enf.OpenSession
	if c.srv.pool != nil {
		open = c.srv.pool.OpenSession
	}
	sess, err := open(ctx, req)
	if err != nil {
		c.srv.release()
		return nil, "", err
	}
	c.sess = sess
	how := ""
	if sess.BuiltAhead() {
		how = " on a sandbox built ahead"
	}
	c.srv.notice("%s: sandbox session %s opened%s for %s", c.id, id, how, termtext.Escape(c.name))
	c.srv.wg.Go(func() { c.watch(sess) })
	note := c.note
	c.note = ""
	return sess, note, nil
}

// watch gives the session's place back when it ends, says when it ended
// by itself (its wall clock, its idle timeout, or an escape signal), and
// whether the audit log refused a record of its end (Server.lost).
func (c *client) watch(sess *enforcer.Session) {
	sum, _ := sess.Summary()
	c.srv.release()
	c.srv.lost(c.id, sum.AuditError)
	if sum.Ended != enforcer.EndedClosed {
		c.srv.notice("%s: sandbox session %s ended by itself (%s) after %d commands", c.id, sess.ID(), sum.Ended, sum.Steps)
		c.mu.Lock()
		if c.sess == sess {
			c.ended(sess)
		}
		c.mu.Unlock()
	}
}

// ended takes note of a sandbox session that ended by itself; under c.mu.
func (c *client) ended(sess *enforcer.Session) {
	c.sess = nil
	sum, _ := sess.Summary()
	if sum.Ended == enforcer.EndedEscape {
		c.escaped = fmt.Sprintf("its sandbox session %s ended on a sign of a sandbox escape", sess.ID())
		return
	}
	c.note = fmt.Sprintf("The previous sandbox session %s ended by itself (%s) after %d commands: this call runs in a new one, "+
		"with a fresh copy of the workspace; the old one's changes were not kept.", sess.ID(), sum.Ended, sum.Steps)
	if c.srv.cfg.Patch != "" {
		c.srv.shortPatch(sess.ID(), "was lost: the session ended by itself")
	}
}

// idleClose closes the sandbox session when no call came for the idle
// time; the next call opens a new one.
func (c *client) idleClose() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active > 0 || c.sess == nil || c.gone {
		return
	}
	sess := c.sess
	c.sess = nil
	c.note = fmt.Sprintf("The previous sandbox session %s was closed after %s without a call: this call runs in a new one, with a fresh copy of the workspace. %s",
		sess.ID(), c.srv.idle.Round(time.Second), c.retire(sess, "idle"))
}

// drop closes the sandbox session of a client that has gone (or of a
// server that shuts down); no call of it runs any more.
func (c *client) drop(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone = true
	c.idle.Stop()
	if c.sess != nil {
		c.retire(c.sess, why)
		c.sess = nil
	}
}

// retire writes a sandbox session's patch where Config.Patch says, then
// closes it (its findings are copied out), and says where both went.
func (c *client) retire(sess *enforcer.Session, why string) string {
	var said []string
	if c.srv.cfg.Patch != "" {
		p := PatchPath(c.srv.cfg.Patch, sess.ID())
		ch, err := sess.Changes()
		if err == nil {
			err = writeNew(p, ch.Patch)
		}
		switch {
		case err != nil:
			said = append(said, "its patch could not be written: "+err.Error())
			c.srv.shortPatch(sess.ID(), "could not be written: "+err.Error())
		default:
			said = append(said, fmt.Sprintf("its patch (%d changed paths) is in %s", len(ch.Files), p))
			if ch.Incomplete != "" {
				said = append(said, "it is short: "+ch.Incomplete)
				c.srv.shortPatch(sess.ID(), "leaves changes out: "+ch.Incomplete)
			}
			for _, o := range ch.Omissions {
				c.srv.notice("%s: sandbox session %s: patch: %s", c.id, sess.ID(), termtext.Escape(o.String()))
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := sess.Close(ctx)
	switch { // a record the audit log refused is watch's to say
	case err != nil && !errors.Is(err, enforcer.ErrAudit):
		said = append(said, "its teardown: "+err.Error())
	case sum.Error != "":
		said = append(said, "its teardown: "+sum.Error)
	case c.srv.cfg.Findings != "":
		said = append(said, "its findings are in "+filepath.Join(c.srv.cfg.Findings, sess.ID()))
	}
	for _, s := range sum.FindingsSkipped {
		said = append(said, "findings: skipped "+s)
	}
	text := strings.Join(said, "; ")
	c.srv.notice("%s: sandbox session %s closed (%s) after %d commands; %s", c.id, sess.ID(), why, sum.Steps, termtext.Escape(text))
	if text == "" {
		return ""
	}
	return strings.ToUpper(text[:1]) + text[1:] + "."
}

// PatchPath is where the patch of sandbox session id goes for the patch
// file name patch: ".id" put before its extension ("agent.patch" gives
// "agent.mcp-0123456789ab.patch"), or after a name without one.
func PatchPath(patch, id string) string {
	ext := filepath.Ext(patch)
	if ext == patch || strings.HasSuffix(patch, "/"+ext) {
		ext = "" // ".patch" alone, or "dir/.patch": a name, not an extension
	}
	return strings.TrimSuffix(patch, ext) + "." + id + ext
}

// writeNew writes data to a new file at p, 0644 as session stop writes a
// patch; it never replaces or follows an existing name.
func writeNew(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}
