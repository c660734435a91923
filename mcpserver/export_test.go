package mcpserver

// MCPSessions counts the MCP sessions s holds, for the tests of the
// bound on them.
func (s *Server) MCPSessions() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// Freed returns a channel closed when MCP session id's place is given
// back (nil when it holds none).
func (s *Server) Freed(id string) <-chan struct{} { return s.freed(id) }
