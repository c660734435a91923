package policy

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/internal/strict"
	"github.com/airlock-sandbox/airlock/sandbox/hostpath"
)

// check is one validation rule. Each looks at one concern and reports
// every problem it finds; the loader attaches file positions.
type check func(p *Policy) []*Error

// checks is the validation run on every policy, in order.
var checks = []check{
	checkToolNames,
	checkRules,
	checkCaps,
	checkEgressDefault,
	checkEgress,
	checkCredentials,
	checkBudgets,
	checkPaths,
	checkRequire,
	checkWeakerModes,
	checkMonitor,
	checkApprovals,
	checkSession,
	checkExamples,
	checkChanges,
}

// Validate checks p as loading does (Parse), without the positions of a
// file: for a policy built in memory, before it is written out.
func (p *Policy) Validate() Errors {
	var errs Errors
	for _, c := range checks {
		errs = append(errs, c(p)...)
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func checkToolNames(p *Policy) []*Error {
	var errs []*Error
	if p.ToolScopes == nil {
		errs = append(errs, strict.Problem("", "missing toolScopes", `add "toolScopes": {} (an empty object denies every command)`))
	}
	for _, tool := range sortedKeys(p.ToolScopes) {
		if !strict.Name(tool) {
			errs = append(errs, strict.Problem(strict.Field("toolScopes", tool),
				fmt.Sprintf("tool name %q is empty or has white space or control characters", tool), ""))
		}
	}
	return errs
}

// EachRule calls f on each command rule of p, with its tool, its list
// ("deny", "escalate" or "allow") and its field's path
// ("toolScopes.ci.allow[0]"): tool by tool in name order, and each tool's
// deny, escalate and allow rules in order.
func (p *Policy) EachRule(f func(tool, list, at string, r CommandPattern)) {
	for _, tool := range sortedKeys(p.ToolScopes) {
		scope := p.ToolScopes[tool]
		for _, list := range []struct {
			name  string
			rules []CommandPattern
		}{{"deny", scope.Deny}, {"escalate", scope.Escalate}, {"allow", scope.Allow}} {
			for i, r := range list.rules {
				f(tool, list.name, strict.Index(strict.Field("toolScopes", tool)+"."+list.name, i), r)
			}
		}
	}
}

func checkRules(p *Policy) []*Error {
	var errs []*Error
	seen := map[[2]string]string{} // a tool's rule name: where it is
	p.EachRule(func(tool, list, at string, r CommandPattern) {
		errs = append(errs, checkRule(at, r)...)
		errs = append(errs, checkShellRule(at, list, r)...)
		if prev, dup := seen[[2]string{tool, r.Name}]; dup && r.Name != "" {
			errs = append(errs, strict.Problem(at+".name", fmt.Sprintf("duplicate rule name %q in tool %q (also %s)", r.Name, tool, prev),
				"rule names identify decisions in the audit stream; make each unique within its tool"))
		} else {
			seen[[2]string{tool, r.Name}] = at
		}
	})
	return errs
}

// maxJustification is the longest justification a rule may carry.
const maxJustification = 1024

func checkRule(at string, r CommandPattern) []*Error {
	var errs []*Error
	if !strict.Name(r.Name) {
		errs = append(errs, strict.Problem(at+".name", fmt.Sprintf("rule name %q is empty or has white space or control characters", r.Name), ""))
	}
	switch {
	case r.Command == "":
		errs = append(errs, strict.Problem(at+".command", "empty command name", `name a program, e.g. "pytest" or "/usr/bin/pytest"`))
	case !strict.PlainText(r.Command) || strings.ContainsAny(r.Command, " \x00"):
		errs = append(errs, strict.Problem(at+".command", fmt.Sprintf("command %q has white space or control characters", r.Command),
			"a command is one program name; put its arguments in argPatterns"))
	case strings.Contains(r.Command, "/") && (!path.IsAbs(r.Command) || path.Clean(r.Command) != r.Command):
		errs = append(errs, strict.Problem(at+".command", fmt.Sprintf("command %q is a path but not a clean absolute path", r.Command),
			`use a bare name resolved through commandSearchPath, or an absolute path such as "/usr/bin/git"`))
	case IsGlob(r.Command):
		errs = append(errs, checkGlob(at+".command", r.Command)...)
	}
	if r.Justification != "" && (!strict.PlainText(r.Justification) || len(r.Justification) > maxJustification) {
		errs = append(errs, strict.Problem(at+".justification", fmt.Sprintf("justification is longer than %d bytes, or has control characters, invalid UTF-8 or white space at its ends", maxJustification),
			"it is shown to agents and on terminals: write one plain line"))
	}
	for i, sig := range r.ArgPatterns {
		for j, a := range sig {
			if strings.IndexByte(a, 0) >= 0 || !utf8.ValidString(a) {
				errs = append(errs, strict.Problem(fmt.Sprintf("%s.argPatterns[%d][%d]", at, i, j), "argument has a NUL byte or invalid UTF-8", ""))
			}
		}
	}
	return errs
}

// capRange bounds each cap: positive, and no larger than a sane maximum.
var capRange = []struct {
	name string
	get  func(*Caps) (float64, bool)
	max  float64
}{
	{"wallSeconds", func(c *Caps) (float64, bool) { return num(c.WallSeconds) }, 86400},
	{"cpuSeconds", func(c *Caps) (float64, bool) { return num(c.CPUSeconds) }, 86400},
	{"memoryMb", func(c *Caps) (float64, bool) { return num(c.MemoryMB) }, 1 << 20},
	{"processCount", func(c *Caps) (float64, bool) { return num(c.ProcessCount) }, 1 << 16},
	{"diskWriteMb", func(c *Caps) (float64, bool) { return num(c.DiskWriteMB) }, 1 << 20},
	{"openFiles", func(c *Caps) (float64, bool) { return num(c.OpenFiles) }, 1 << 20},
	{"outputMb", func(c *Caps) (float64, bool) { return num(c.OutputMB) }, 1 << 20},
}

// num is a field's value as a float64, and whether it is set.
func num[T int64 | float64](v *T) (float64, bool) {
	if v == nil {
		return 0, false
	}
	return float64(*v), true
}

func checkCaps(p *Policy) []*Error {
	var errs []*Error
	check := func(at string, c *Caps) {
		if c == nil {
			return
		}
		for _, r := range capRange {
			v, ok := r.get(c)
			switch {
			case !ok:
			case v <= 0:
				errs = append(errs, strict.Problem(at+"."+r.name, fmt.Sprintf("%s must be positive, got %v", r.name, v),
					"remove the field to take the default"))
			case v > r.max:
				errs = append(errs, strict.Problem(at+"."+r.name, fmt.Sprintf("%s is out of range: %v is more than %v", r.name, v, r.max), ""))
			}
		}
	}
	check("caps", p.Caps)
	for _, tool := range sortedKeys(p.ToolScopes) {
		check(strict.Field("toolScopes", tool)+".caps", p.ToolScopes[tool].Caps)
	}
	return errs
}

func checkEgressDefault(p *Policy) []*Error {
	if p.Egress != nil && p.Egress.Default != "" && p.Egress.Default != "deny" {
		return []*Error{strict.Problem("egress.default", fmt.Sprintf("egress default %q is not supported", p.Egress.Default),
			`airlock denies by default; write "deny" or leave it out, and allowlist hosts per task`)}
	}
	return nil
}

func checkPaths(p *Policy) []*Error {
	var errs []*Error
	var host *hostpath.Checker
	// abs checks that each of list is a clean absolute path, not the
	// root; field, when not "", is the filesystem field that shows them
	// to the sandbox, whose own validation of what it may show (its
	// words, its real path, its place among this host's mounts) they must
	// pass too: run refuses the same paths, and the init checks again what
	// it binds.
	abs := func(at, what, field string, list []string) {
		for i, dir := range list {
			where := strict.Index(at, i)
			switch {
			case !path.IsAbs(dir) || path.Clean(dir) != dir || !strict.PlainText(dir):
				errs = append(errs, strict.Problem(where, fmt.Sprintf("%s %q is not a clean absolute path", what, dir),
					"relative entries would depend on the current directory"))
			case dir == "/":
				errs = append(errs, strict.Problem(where, fmt.Sprintf("%s may not be the whole host root", what),
					"bind the directories the command needs, e.g. /usr"))
			case field != "":
				var err error
				if host == nil {
					host, err = hostpath.NewChecker()
				}
				if err == nil {
					err = host.Check(field, dir)
				}
				if err != nil {
					errs = append(errs, strict.Problem(where, err.Error(),
						"the sandbox never shows the host's sockets, kernel interfaces, homes or state, nor its own directories (docs/sandbox.md)"))
				}
			}
		}
	}
	abs("commandSearchPath", "search path entry", "", p.CommandSearchPath)
	for i, dir := range p.CommandSearchPath {
		if t := sandboxTree(dir); t != "" {
			errs = append(errs, strict.Problem(strict.Index("commandSearchPath", i), fmt.Sprintf("search path entry %q is in %s, which the sandbox writes", dir, t),
				`a bare name must not find a file the agent wrote; name a workspace program by its path ("/workspace/.venv/bin/*")`))
		}
	}
	fsCheck := func(at string, fs *Filesystem) {
		if fs != nil {
			abs(at+".readOnly", "read-only path", "readOnly", fs.ReadOnly)
			abs(at+".readWrite", "read-write path", "readWrite", fs.ReadWrite)
		}
	}
	fsCheck("filesystem", p.Filesystem)
	for _, tool := range sortedKeys(p.ToolScopes) {
		fsCheck(strict.Field("toolScopes", tool)+".filesystem", p.ToolScopes[tool].Filesystem)
	}
	return errs
}

func checkMonitor(p *Policy) []*Error {
	m := p.Monitor
	if m == nil {
		return nil
	}
	var errs []*Error
	for _, f := range []struct {
		name string
		v    *int64
	}{{"egressDenyBurst", m.EgressDenyBurst}, {"commandDenyRepeat", m.CommandDenyRepeat}} {
		if f.v != nil && *f.v < 1 {
			errs = append(errs, strict.Problem("monitor."+f.name, fmt.Sprintf("%s must be at least 1, got %d", f.name, *f.v), ""))
		}
	}
	if m.WindowSeconds != nil && (*m.WindowSeconds <= 0 || *m.WindowSeconds > 86400) {
		errs = append(errs, strict.Problem("monitor.windowSeconds", fmt.Sprintf("windowSeconds must be in (0, 86400], got %v", *m.WindowSeconds), ""))
	}
	return errs
}
