package mcpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
)

// maxPatch bounds the patch text a changes call shows; the whole patch is
// written to Config.Patch when the sandbox session closes.
const maxPatch = 256 << 10

// Changes is the result of ChangesTool.
type Changes struct {
	Session        string               `json:"session" jsonschema:"the sandbox session whose /workspace this is; empty when none has started yet"`
	Files          []changes.FileChange `json:"files" jsonschema:"every changed path under /workspace, with how it changed"`
	Incomplete     string               `json:"incomplete,omitempty" jsonschema:"why the patch does not hold every change"`
	Omissions      []changes.Omission   `json:"omissions,omitempty" jsonschema:"the changes the patch leaves out, counted by class (limit, large, unread, skipped, git, blocked), each with its first path"`
	Excluded       []changes.Exclusion  `json:"excluded,omitempty" jsonschema:"what the policy's changes.exclude (policy) and the workspace's original .gitignore files (gitignore) left out: paths and whole directories counted, the first few named"`
	Patch          string               `json:"patch" jsonschema:"the changes as a unified diff in git's format, at most 256 KiB of it, bytes that are not UTF-8 replaced"`
	PatchBytes     int                  `json:"patchBytes" jsonschema:"the whole patch's length"`
	PatchTruncated bool                 `json:"patchTruncated" jsonschema:"true when patch holds less than patchBytes"`
}

// Findings is the result of FindingsTool.
type Findings struct {
	Session    string               `json:"session" jsonschema:"the sandbox session whose /findings this is; empty when none has started yet"`
	Files      []changes.FileChange `json:"files" jsonschema:"every entry of /findings, as added, with its mode, size and SHA-256"`
	Incomplete string               `json:"incomplete,omitempty" jsonschema:"why files does not list every entry"`
	Kept       string               `json:"kept,omitempty" jsonschema:"the host directory they are copied to when the sandbox session ends; empty when they are not kept"`
}

// sessionSchema infers a session tool's output schema (changes.Mode is
// written as its octal string).
func sessionSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[changes.Mode](): {Type: "string", Pattern: "^[0-7]+$"}}})
	if err != nil {
		panic(err)
	}
	return s
}

var noInput = &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}

func changesTool() *mcp.Tool {
	return &mcp.Tool{Name: ChangesTool, Title: "workspace changes (airlock)",
		Description: "Shows what changed in the sandbox's /workspace since this MCP session's sandbox session started: the changed paths, " +
			"and the patch in git's format (at most 256 KiB of it here; the whole patch is kept for the operator when the session ends). Runs nothing.",
		InputSchema: noInput, OutputSchema: sessionSchema[Changes](),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}
}

func findingsTool() *mcp.Tool {
	return &mcp.Tool{Name: FindingsTool, Title: "findings (airlock)",
		Description: "Lists what the sandbox's /findings holds now: the files a command left there for the operator, copied out of the sandbox " +
			"when this MCP session's sandbox session ends. Runs nothing.",
		InputSchema: noInput, OutputSchema: sessionSchema[Findings](),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}
}

// live is the client's sandbox session if it has one; a session tool
// opens none, and is no activity for the idle timeout (which counts from
// the last command, as the sandbox session's own does).
func (s *Server) live(req *mcp.CallToolRequest) (*enforcer.Session, error) {
	c, err := s.client(req.Session)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess, nil
}

func (s *Server) changes(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Changes, error) {
	out := Changes{Files: []changes.FileChange{}}
	sess, err := s.live(req)
	if err != nil || sess == nil {
		return nil, out, err
	}
	ch, err := sess.Changes()
	if err != nil {
		return nil, out, err
	}
	out.Session, out.Files, out.Incomplete, out.PatchBytes = sess.ID(), ch.Files, ch.Incomplete, len(ch.Patch)
	out.Omissions, out.Excluded = ch.Omissions, ch.Excluded
	p := ch.Patch
	if len(p) > maxPatch {
		p, out.PatchTruncated = p[:maxPatch], true
	}
	out.Patch = strings.ToValidUTF8(string(p), "\uFFFD")
	var b strings.Builder
	fmt.Fprintf(&b, "%d changed paths in /workspace of sandbox session %s", len(out.Files), out.Session)
	if out.Incomplete != "" {
		fmt.Fprintf(&b, " (incomplete: %s)", out.Incomplete)
	}
	b.WriteString("\n")
	for _, f := range out.Files {
		fmt.Fprintf(&b, "%s %s\n", f.Kind, changes.QuotePath(f.Path))
	}
	for _, o := range out.Omissions {
		fmt.Fprintln(&b, o.String())
	}
	for _, e := range out.Excluded {
		fmt.Fprintln(&b, e.String())
	}
	if out.PatchBytes > 0 {
		fmt.Fprintf(&b, "--- patch (%d bytes%s) ---\n%s", out.PatchBytes, map[bool]string{true: ", truncated"}[out.PatchTruncated], out.Patch)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, out, nil
}

func (s *Server) findings(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Findings, error) {
	out := Findings{Files: []changes.FileChange{}}
	sess, err := s.live(req)
	if err != nil || sess == nil {
		return nil, out, err
	}
	f, err := sess.Findings()
	if err != nil {
		return nil, out, err
	}
	out.Session, out.Files, out.Incomplete = sess.ID(), f.Files, f.Incomplete
	if s.cfg.Findings != "" {
		out.Kept = filepath.Join(s.cfg.Findings, sess.ID())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries in /findings of sandbox session %s", len(out.Files), out.Session)
	if out.Kept != "" {
		fmt.Fprintf(&b, ", copied to the operator's %s when it ends", out.Kept)
	}
	b.WriteString("\n")
	for _, f := range out.Files {
		fmt.Fprintf(&b, "%s %d bytes sha256:%s\n", changes.QuotePath(f.Path), f.NewSize, f.NewSHA256)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, out, nil
}
