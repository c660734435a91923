package proxy

import (
	"io"
	"net"
)

// readByte reads the first byte of c the portable way and returns a
// connection that replays it. The replaying wrapper hides the bare
// *net.TCPConn, so tunnels through it copy in user space.
func readByte(c net.Conn) (byte, net.Conn, error) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, c, err
	}
	return b[0], &prefixConn{Conn: c, prefix: b[:]}, nil
}

// prefixConn is a connection whose first bytes were already read.
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
