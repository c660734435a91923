package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"time"
)

// prefixConn is a connection whose first bytes were already read: it
// replays them, then reads the connection.
type prefixConn struct {
	net.Conn
	prefix []byte
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
