package policy

import (
	"fmt"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/strict"
)

// warnings are the checks whose problems do not make a policy invalid:
// rules that may not hold as they read. `airlock policy check` shows each
// at its place (Loaded.Warnings); nothing else changes for them.
var warnings = []check{warnPathArgs}

func warn(p *Policy) Errors {
	var ws Errors
	for _, c := range warnings {
		ws = append(ws, c(p)...)
	}
	return ws
}

// warnPathArgs flags each deny and escalate rule whose arguments name a
// path: the gate compares them as paths, lexically, from the step's
// working directory, which keeps the rule from being passed by spelling
// the path another way, but not by a link, another position, an option
// with its value attached or another program (docs/policy.md, "Arguments
// and paths"). The file system view is what keeps a file away.
func warnPathArgs(p *Policy) []*Error {
	var ws []*Error
	p.EachRule(func(_, list, at string, r CommandPattern) {
		if j, k, ok := pathArg(r.ArgPatterns); ok && list != "allow" {
			ws = append(ws, strict.Problem(fmt.Sprintf("%s.argPatterns[%d][%d]", at, j, k),
				fmt.Sprintf("%s rule %q names a path, %q: it holds for every spelling of that path, "+
					"not for a link to the file, the path at another place in the arguments, "+
					"an option with it attached (-f.env) or another program reading the file", list, r.Name, r.ArgPatterns[j][k]),
				"to keep a file from the sandbox, leave it out of the workspace and of filesystem.readOnly and readWrite "+
					`(docs/policy.md, "Arguments and paths")`))
		}
	})
	return ws
}

// pathArg finds the first argument of sigs that looks like a path.
func pathArg(sigs [][]string) (int, int, bool) {
	for j, sig := range sigs {
		for k, a := range sig {
			if looksLikePath(a) {
				return j, k, true
			}
		}
	}
	return 0, 0, false
}

// looksLikePath reports whether a, or the VALUE of a NAME=VALUE, has a
// '/', starts with '.' or ends in a file name extension: ".env",
// "/etc/shadow", "secrets/key", "id_rsa.pub", "--file=.env", "-f.env".
// It is a guess for a warning; the gate compares every argument of a deny
// or escalate rule as a path.
func looksLikePath(a string) bool {
	if _, v, ok := strings.Cut(a, "="); ok {
		a = v
	}
	if strings.Contains(a, "/") || strings.HasPrefix(a, ".") {
		return true
	}
	i := strings.LastIndexByte(a, '.')
	return i > 0 && i+1 < len(a) && ('a' <= a[i+1] && a[i+1] <= 'z' || 'A' <= a[i+1] && a[i+1] <= 'Z')
}
