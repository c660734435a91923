package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// prefixConn is a connection whose first bytes were already read: it
// replays them, then reads the connection. The proxy hands the
// connections it sniffed as HTTP to its http.Server as prefixConns; one
// then also holds the connection's slot of the connection share, and
// notices when the server answers a request it could not parse (a
// malformed or oversized request, answered 400 or 431 before any handler
// runs), so that the refusal reaches the audit stream.
type prefixConn struct {
	net.Conn
	prefix []byte

	p      *Proxy // nil: none of the below
	slot   *slot
	first  string                 // the first line of what was read ahead
	served atomic.Bool            // a handler has run for a request
	status atomic.Pointer[string] // the server's own error reply, if any
	once   sync.Once
	client atomic.Pointer[tenant] // at a gateway, the client the connection is bound to
	// clientSlot is the connection's hold on its client's own share, set
	// by the request that bound it (the server's handlers run one at a
	// time on a connection); released with slot.
	clientSlot *slot
}

// bind binds c to t unless it is bound already, and returns the client
// it is bound to, and whether this call bound it.
func (c *prefixConn) bind(t *tenant) (*tenant, bool) {
	if c.client.CompareAndSwap(nil, t) {
		return t, true
	}
	return c.client.Load(), false
}

// release gives back c's holds on the connection shares.
func (c *prefixConn) release() {
	c.slot.release()
	c.clientSlot.release()
}

// connKey carries the server's connection in a request's context.
type connKey struct{}

// Write passes b on; a write before any handler has run is the
// http.Server's own error reply to a request it could not parse, whose
// status line is kept for the audit record.
func (c *prefixConn) Write(b []byte) (int, error) {
	if c.p != nil && !c.served.Load() && c.status.Load() == nil {
		line, _, _ := bytes.Cut(b, []byte("\r\n"))
		s := string(line[:min(len(line), maxRequestedBytes)])
		c.status.Store(&s)
	}
	return c.Conn.Write(b)
}

// closed is called when the http.Server has closed c: it reports a
// request the server refused, and gives c's slot back.
func (c *prefixConn) closed() {
	c.once.Do(func() {
		if s := c.status.Load(); s != nil && c.p != nil {
			c.p.reject(rejectHTTP, ProtocolHTTP, c.RemoteAddr().String(), c.first,
				fmt.Sprintf("malformed HTTP request refused: the proxy's HTTP server answered %+q", *s))
		}
		c.release()
	})
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// CloseWrite half-closes the connection, as the http.Server does before
// closing after an error response.
func (c *prefixConn) CloseWrite() error { return closeWrite(c.Conn) }

// lingerClose closes c after a refusal without losing the reply: closing
// a socket with unread input sends a reset, which may reach the client
// before it has read the reply. It half-closes, discards what the client
// still sends for a moment, then closes.
func lingerClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_ = c.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}
	c.Close()
}

// lingerTime bounds how long lingerClose waits for the client.
const lingerTime = 500 * time.Millisecond

// buffered returns a copy of what br has read ahead.
func buffered(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	return bytes.Clone(b)
}

// firstLine returns the first line of what br has read ahead (without
// reading more), at most maxRequestedBytes of it, as raw bytes: what a
// refused request's record keeps of it.
func firstLine(br *bufio.Reader) string {
	b, _ := br.Peek(min(br.Buffered(), maxRequestedBytes))
	line, _, _ := bytes.Cut(b, []byte("\r\n"))
	return redactUserinfo(string(line))
}
