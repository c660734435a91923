package enforcer

import (
	"fmt"
	"strings"

	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
)

// command is how an allowed command runs in the sandbox: the file, or a
// workspace program's path that the sandbox's init resolves in its tree;
// the command line; and, for a shell rule's script, the shell's own
// environment (cmdgate.ShellEnv).
type command struct {
	path, tree string
	argv       []string
	shell      bool     // a shell rule's script: environ applies ShellEnv
	search     []string // the policy's command search path
	dir        string   // the working directory
}

// commandOf finds how the command d allowed or escalated runs: a bare
// name through the policy's search path (in rootfs, an image's root, when
// set), a path as named, a relative one from dir, and a workspace program
// by the init, inside the sandbox.
func (e *Enforcer) commandOf(rootfs string, d decision.Decision, name string, args []string, dir string) (command, error) {
	c := command{argv: argv(name, args), search: e.pol.SearchPath(), dir: dir}
	p, tree := cmdgate.Program(name, dir)
	switch {
	case tree != "":
		c.path, c.tree = p, tree
	default:
		if p == "" {
			p = name
		}
		resolved, err := e.Resolve(rootfs, p)
		if err != nil {
			said := "escalated"
			if d.Allowed() {
				said = "allowed"
			}
			return c, fmt.Errorf("the command gate %s %q but it cannot be run: %w", said, name, err)
		}
		c.path = resolved
	}
	if s := d.Script; s != nil {
		c.shell = true
		c.argv = cmdgate.ShellArgv(s.Shell, c.argv)
	}
	return c, nil
}

// scriptMissing names every program a script's decision allowed by a
// bare name that is not on the search path, where the shell (whose PATH
// is that path) will look, with its place in the script: said before the
// shell starts rather than as its "not found" halfway through. Not a
// refusal, as the script may hold its fallback (a || b). (An escalated
// entry may be a construct, whose command is not known.)
func (e *Enforcer) scriptMissing(rootfs string, s *decision.Script) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, sc := range s.Commands {
		if sc.Verdict != decision.Allow || strings.Contains(sc.Command, "/") || cmdgate.Builtin(sc.Command) {
			continue
		}
		if _, err := e.Resolve(rootfs, sc.Command); err != nil {
			out = append(out, fmt.Sprintf("the script's %q (at %s) cannot be run: %v", sc.Command, sc.Pos, err))
		}
	}
	return out
}

// environ is the command's environment made of env: for a script, without
// what would let the shell run anything but what was decided.
func (c command) environ(env []string) []string {
	if !c.shell {
		return env
	}
	return cmdgate.ShellEnv(env, c.search, c.dir)
}
