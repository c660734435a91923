package authoring

import (
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/policy"
)

// readable reports whether s can go into a policy a person reviews as it
// is: valid UTF-8 with no control characters, no invisible format
// characters (bidirectional overrides among them) and no line or
// paragraph separators. An argument the agent chose that is not is left
// out rather than proposed: what a reviewer reads must be what runs.
func readable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
	}) < 0
}

// shells are the programs that run a script given with -c.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "busybox"}

// interpreters run code given on their command line (-c, -e).
var interpreters = []string{"python", "python3", "python2", "perl", "ruby", "node", "nodejs", "php", "lua", "Rscript", "osascript", "pwsh"}

// launchers run another program named in their arguments.
var launchers = []string{"env", "xargs", "sudo", "doas", "su", "nohup", "nice", "timeout", "stdbuf", "setsid", "chroot", "unshare", "nsenter", "flock", "strace", "ltrace", "gdb", "find", "parallel", "watch"}

// isShell reports whether command names a shell.
func isShell(command string) bool { return slices.Contains(shells, path.Base(command)) }

// scriptOption reports whether arg gives a shell a script to run: -c, a
// cluster of short options holding it ("-ec", "-lc"), or --command.
func scriptOption(arg string) bool {
	if arg == "--command" {
		return true
	}
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return false
	}
	return strings.IndexByte(arg[1:], 'c') >= 0
}

// shellRule reports whether r lets a shell be given a script with -c: a
// rule with "shell": true (which decides each command of the script), or
// one whose command is a shell with any arguments, or a signature with
// such an option (which runs any script).
func shellRule(r policy.CommandPattern) bool {
	if r.Shell {
		return true
	}
	if !isShell(r.Command) {
		return false
	}
	if r.AllowExtraArgs {
		return true
	}
	for _, sig := range r.ArgPatterns {
		if slices.ContainsFunc(sig, scriptOption) {
			return true
		}
	}
	return false
}

// writableTrees are where the sandbox's processes can write, whatever the
// policy says: a program there is the agent's.
var writableTrees = []string{"/workspace", "/tmp", "/findings", "/var/tmp", "/dev/shm"}

// workspaceProgram reports whether command names a program under a tree
// the sandbox can write (/workspace, /tmp, the tool's readWrite paths), by
// its path or a glob: a rule for it runs whatever the agent put there.
func workspaceProgram(p *policy.Policy, tool, command string) bool {
	if !path.IsAbs(command) {
		return false
	}
	return under(command, slices.Concat(writableTrees, p.FilesystemFor(tool).ReadWrite))
}

// commandRisks are the notes on a rule for tool running command.
func commandRisks(p *policy.Policy, tool string, r policy.CommandPattern) []string {
	var risks []string
	b := path.Base(r.Command)
	switch {
	case r.Shell:
		risks = append(risks, "a shell rule: it runs scripts whose every command this tool's rules allow")
	case shellRule(r):
		risks = append(risks, "a shell with -c: it runs any script it is given (here, the scripts refused, exactly)")
	case isShell(r.Command):
		risks = append(risks, "a shell: it runs the script files it is given")
	case slices.Contains(interpreters, b) || strings.HasPrefix(b, "python3."):
		risks = append(risks, "an interpreter: it runs the code it is given")
	case slices.Contains(launchers, b):
		risks = append(risks, "it runs other programs named in its arguments")
	}
	if workspaceProgram(p, tool, r.Command) {
		risks = append(risks, "a program under a tree the sandbox writes (/workspace, /tmp, readWrite): it runs whatever the agent put there")
	}
	return risks
}
