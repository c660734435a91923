// Package mcpserver serves a policy's tools over the Model Context
// Protocol (MCP), on the official Go SDK: each tool scope of the policy is
// an MCP tool of the same name that runs one command in a sandbox session
// of airlock's enforcer, decided at the command gate against that tool;
// two more tools show the session's workspace changes and its findings.
//
// Each MCP session (one stdio connection, one streamable HTTP session)
// gets sandbox sessions of its own, never shared: the first is opened at
// its first tool call and the last is closed when the client goes away,
// at the policy's idle timeout, or when the server shuts down, its
// findings and patch written where Config says, under names that carry
// the session's id. An escalated command asks the person at the client
// through MCP elicitation (Elicitation), bound to a single-use request id
// the server mints; without elicitation the refusal says how an operator
// approves it out of band (airlock approve). Every call, decision,
// approval and result is in the audit stream, each record carrying the
// MCP session's id. The contract is docs/mcp.md.
package mcpserver
