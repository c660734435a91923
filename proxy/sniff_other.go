//go:build !unix

package proxy

import "net"

// peekByte reads the first byte a client sent; without recv(MSG_PEEK) the
// connection is wrapped to replay it.
func peekByte(c net.Conn) (byte, net.Conn, error) { return readByte(c) }
