package approval

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// Field is one thing an approval is bound to, as a person is shown it.
type Field struct {
	// Name is the field's name, as shown and as a refusal names it.
	Name string
	// Value is the field's value, exact and escaped for a terminal
	// (internal/termtext): the agent chose most of it.
	Value string
	key   string // the exact value compared; lists encoded unambiguously
}

// Bound returns every field an approval of r is bound to, in the order a
// person is shown them: what decides what the command runs (its argv,
// program, environment, working directory and stdin, and the egress
// task, workspace and image it runs with), then who asks and under what
// (tool, session, policy). The rule, reason and justification are not
// bound: the tool, argv and policy decide them.
func (r Request) Bound() []Field {
	return []Field{
		{"tool", termtext.Escape(r.Tool), r.Tool},
		{"command", termtext.Argv(r.Argv), listKey(r.Argv)},
		{"program", termtext.Escape(r.Program) + " (" + termtext.Escape(r.ProgramDigest) + ")", listKey([]string{r.Program, r.ProgramDigest})},
		{"environment", orNone(termtext.Argv(r.Env), len(r.Env) == 0), listKey(r.Env)},
		{"working directory", termtext.Escape(r.Cwd), r.Cwd},
		{"stdin", stdinShown(r), fmt.Sprintf("%s %d", r.Stdin, r.StdinBytes)},
		{"egress task", termtext.Escape(r.Task), r.Task},
		{"workspace", orNone(termtext.Escape(r.Workspace), r.Workspace == ""), r.Workspace},
		{"image", orNone(termtext.Escape(r.Image), r.Image == ""), r.Image},
		{"session", termtext.Escape(r.Session), r.Session},
		{"policy", termtext.Escape(r.PolicyDigest), r.PolicyDigest},
	}
}

func orNone(shown string, none bool) string {
	if none {
		return "(none)"
	}
	return shown
}

func stdinShown(r Request) string {
	if r.Stdin == StdinNone {
		return StdinNone
	}
	return fmt.Sprintf("%s (%d bytes)", termtext.Escape(r.Stdin), r.StdinBytes)
}

// listKey encodes a list of strings as a record does: a different list
// never has the same key.
func listKey(ss []string) string {
	e := &encoder{}
	e.strs(ss)
	return string(e.b)
}

// Match returns nil when want asks for exactly what r is bound to (every
// field of Bound, byte for byte), else an error matching ErrMismatch
// that names the first field that differs and shows both values.
func (r Request) Match(want Request) error {
	got, asked := r.Bound(), want.Bound()
	for i, f := range got {
		if f.key == asked[i].key {
			continue
		}
		if f.Name == "command" {
			return refuse(ErrMismatch, "%s was given for another command (approved: %s; asked: %s): an approval is bound to its exact argv",
				r.ID, termtext.Clip(f.Value, 200), termtext.Clip(asked[i].Value, 200))
		}
		return refuse(ErrMismatch, "%s was given for %s \"%s\", not \"%s\": an approval is bound to the %[2]s it showed",
			r.ID, f.Name, termtext.Clip(f.Value, 200), termtext.Clip(asked[i].Value, 200))
	}
	return nil
}
