package proxy

import "net"

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
