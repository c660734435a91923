package mcpserver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

// The session tools' names; no tool scope may take them.
const (
	ChangesTool  = "airlock_changes"
	FindingsTool = "airlock_findings"
)

// maxDescription bounds a tool's description: a policy of thousands of
// rules must not fill the model's context with one tools/list.
const maxDescription = 8 << 10

// validToolName reports whether name has the MCP tool-name form
// (SEP-986): 1 to 128 letters, digits, '_', '-' and '.'. A loop rather
// than a regexp: `{1,128}` compiles to 128 copies of the class, some
// 1,700 allocations in this package's initialiser, which every airlock
// command would pay at start.
func validToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// Input is a command tool's arguments (the schema is commandSchema's).
type Input struct {
	Command  string   `json:"command"`
	Args     []string `json:"args,omitempty"`
	Timeout  float64  `json:"timeout,omitempty"`
	Cwd      string   `json:"cwd,omitempty"`
	Approval string   `json:"approval,omitempty"`
}

// commandTool is the MCP tool of the policy's tool scope name: its input
// schema, its description generated from the scope, and the annotations
// the scope and the task's allowlist let airlock know (docs/mcp.md,
// "Tools").
func commandTool(pol *policy.Loaded, name, task string) *mcp.Tool {
	caps := pol.CapsFor(name)
	sc := pol.ToolScopes[name]
	writable := len(pol.FilesystemFor(name).ReadWrite) > 0
	hosts := pol.EgressConfig().TaskAllowlist[task]
	t := &mcp.Tool{
		Name:        name,
		Title:       name + " (airlock sandbox)",
		Description: describe(pol, name, hosts, caps),
		InputSchema: commandSchema(caps.WallSeconds),
		Annotations: &mcp.ToolAnnotations{
			// A scope that runs nothing changes nothing; of any other,
			// airlock cannot know what its commands do.
			ReadOnlyHint: len(sc.Allow) == 0 && len(sc.Escalate) == 0,
			// Every change lands in the sandbox's copies unless the
			// tool's view binds a host path writable.
			DestructiveHint: ptr(writable),
			// No network at all unless the task's allowlist names a
			// destination.
			OpenWorldHint: ptr(len(hosts) > 0),
		},
	}
	t.OutputSchema = resultSchema
	return t
}

func ptr[T any](v T) *T { return &v }

// commandSchema is a command tool's input schema; timeout is bounded by
// the tool's wall-clock cap.
func commandSchema(wall float64) *jsonschema.Schema {
	str := func(desc string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: desc} }
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"command": str("the command: a name this tool allows (see the description), or its absolute path where the policy names one"),
			"args":    {Type: "array", Items: &jsonschema.Schema{Type: "string"}, Description: "the command's arguments, each one word (no shell is involved)"},
			"timeout": {Type: "number", ExclusiveMinimum: ptr(0.0), Maximum: ptr(wall),
				Description: fmt.Sprintf("seconds: lowers this call's wall-clock cap (%gs), never raises it", wall)},
			"cwd": str("working directory inside the sandbox: relative to /workspace (the default), or absolute"),
			"approval": {Type: "string", Pattern: "^apr-[0-9a-f]{32}$",
				Description: "the id of an approval request an operator approved out of band (`airlock approve ID`): runs this escalated command once"},
		},
		Required:             []string{"command"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// describe is a command tool's description: what the sandbox keeps, the
// network it has, and every rule of the scope with its justification.
func describe(pol *policy.Loaded, name string, hosts []string, caps policy.EffectiveCaps) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Runs one command in airlock's Linux sandbox, decided first by airlock's command gate against tool %q; "+
		"the call's result is the command's output and exit code, or why it was refused. "+
		"Every call of this MCP session runs in the same sandbox: /workspace (a copy of the operator's workspace) and /tmp are kept from call to call; "+
		"the processes a call leaves are killed. ", name)
	if len(hosts) == 0 {
		b.WriteString("Network: none (the egress proxy allows no destination).")
	} else {
		fmt.Fprintf(&b, "Network: only through airlock's egress proxy, to %s.", strings.Join(hosts, ", "))
	}
	fmt.Fprintf(&b, " Each call: at most %gs wall clock and %gs CPU; output past %d MiB is cut and the command killed.\n", caps.WallSeconds, caps.CPUSeconds, caps.OutputMB)
	sc := pol.ToolScopes[name]
	n := 0
	section := func(title string, rules []policy.CommandPattern) {
		if len(rules) == 0 {
			return
		}
		b.WriteString(title)
		for _, r := range rules {
			line := "- " + signatures(r) + " (rule " + r.Name
			if r.Justification != "" {
				line += ": " + r.Justification
			}
			line += ")\n"
			if b.Len()+len(line) > maxDescription-200 {
				n++
				continue
			}
			b.WriteString(line)
		}
	}
	section("Allowed (the command with exactly these arguments; … means more may follow):\n", sc.Allow)
	section("Needs a person's approval first (escalate):\n", sc.Escalate)
	section("Denied, whatever else matches:\n", sc.Deny)
	if n > 0 {
		fmt.Fprintf(&b, "(%d more rules not shown: a refused call lists what its command may do.)\n", n)
	}
	b.WriteString("Anything else is denied. A refusal says why, whether retrying can help, and what would pass.")
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// signatures shows one rule's argument signatures as shell lines: a
// shell rule's is its -c SCRIPT, a glob of workspace programs shows as
// written.
func signatures(r policy.CommandPattern) string {
	cmd := termtext.Argv([]string{r.Command})
	if policy.IsGlob(r.Command) {
		cmd = r.Command
	}
	line := func(args []string) string {
		if len(args) == 0 {
			return cmd
		}
		return cmd + " " + termtext.Argv(args)
	}
	switch {
	case r.Shell:
		return line([]string{"-c"}) + " SCRIPT (each command of SCRIPT is decided by these rules; $(...), eval, source, " +
			"a variable or glob as a command, functions and redirections outside the writable trees are refused)"
	case len(r.ArgPatterns) == 0 && r.AllowExtraArgs:
		return line(nil) + " … (any arguments)"
	case len(r.ArgPatterns) == 0:
		return line(nil) + " (no arguments)"
	}
	var out []string
	for _, p := range r.ArgPatterns {
		s := line(p)
		if r.AllowExtraArgs {
			s += " …"
		}
		out = append(out, s)
	}
	return strings.Join(slices.Compact(out), " | ")
}
