package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/strict"
)

// ProgramTrees are the sandbox's own writable trees in which a rule's
// command may name a workspace program, by a path or a glob of one
// ("/workspace/.venv/bin/*"): a tmpfs of the sandbox's that nothing
// outside it writes, resolved inside the sandbox by its init
// (docs/policy.md, "Workspace programs"). /findings and /dev/shm are
// writable too, but mounted noexec.
var ProgramTrees = []string{"/workspace", "/tmp"}

// sandboxTrees are every tree of the sandbox's own writable tmpfs.
var sandboxTrees = []string{"/workspace", "/tmp", "/findings", "/dev/shm"}

// ProgramTree returns the tree of ProgramTrees that holds p, a clean
// absolute path, or "" when none does (p is not a workspace program).
func ProgramTree(p string) string {
	return under(p, ProgramTrees)
}

// sandboxTree returns the tree of the sandbox's writable tmpfs that holds
// p (or is p), or "".
func sandboxTree(p string) string {
	if slices.Contains(sandboxTrees, p) {
		return p
	}
	return under(p, sandboxTrees)
}

// under returns the tree of trees strictly above p, or "".
func under(p string, trees []string) string {
	for _, t := range trees {
		if strings.HasPrefix(p, t+"/") {
			return t
		}
	}
	return ""
}

// IsGlob reports whether a rule's command is a glob: it has one of the
// metacharacters of path.Match ('*', '?', '[').
func IsGlob(command string) bool {
	return strings.ContainsAny(command, "*?[")
}

// Shells are the shells a rule with "shell": true may name, by their base
// name: each is parsed in its own dialect.
var Shells = []string{"sh", "bash", "dash"}

// ShellOf returns the base name of command when it names one of Shells
// (bare, or an absolute path ending in it), else "".
func ShellOf(command string) string {
	base := path.Base(command)
	for _, s := range Shells {
		if base == s && (command == s || path.IsAbs(command)) {
			return s
		}
	}
	return ""
}

// checkGlob checks a glob command: a workspace program's, a valid
// pattern, in one of ProgramTrees.
func checkGlob(at, command string) []*Error {
	if strings.ContainsRune(command, '\\') {
		return []*Error{strict.Problem(at, fmt.Sprintf("command %q is a glob with a backslash", command), "write the path without escapes")}
	}
	if _, err := path.Match(command, ""); err != nil {
		return []*Error{strict.Problem(at, fmt.Sprintf("command %q is not a valid glob: %v", command, err), `e.g. "/workspace/.venv/bin/*"`)}
	}
	t := under(command, ProgramTrees)
	if t == "" || IsGlob(t) {
		return []*Error{strict.Problem(at, fmt.Sprintf("command %q is a glob outside %s", command, strings.Join(ProgramTrees, " and ")),
			`a glob names workspace programs, the agent's own, e.g. "/workspace/.venv/bin/*"; name any other program by its path or bare name`)}
	}
	return nil
}

// checkShellRule checks the fields of a shell rule: an allow rule, on a
// shell, with no argPatterns.
func checkShellRule(at, kind string, r CommandPattern) []*Error {
	var errs []*Error
	if r.ShellUnknown != "" && r.ShellUnknown != "deny" && r.ShellUnknown != "escalate" {
		errs = append(errs, strict.Problem(at+".shellUnknown", fmt.Sprintf("shellUnknown %q is not deny or escalate", r.ShellUnknown), ""))
	}
	if !r.Shell {
		if r.ShellUnknown != "" {
			errs = append(errs, strict.Problem(at+".shellUnknown", "shellUnknown without \"shell\": true", `add "shell": true, or remove shellUnknown`))
		}
		return errs
	}
	switch {
	case kind != "allow":
		errs = append(errs, strict.Problem(at+".shell", fmt.Sprintf("a %s rule cannot be a shell rule", kind),
			"a shell rule allows scripts whose every command the tool's rules allow; deny or escalate the commands themselves"))
	case ShellOf(r.Command) == "":
		errs = append(errs, strict.Problem(at+".shell", fmt.Sprintf("command %q is not a shell airlock reads (%s)", r.Command, strings.Join(Shells, ", ")), ""))
	case len(r.ArgPatterns) > 0 || r.AllowExtraArgs:
		errs = append(errs, strict.Problem(at+".shell", "a shell rule takes no argPatterns or allowExtraArgs",
			"it accepts -c SCRIPT and decides each command of SCRIPT by the tool's rules"))
	}
	return errs
}
