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
