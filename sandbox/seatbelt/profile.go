package seatbelt

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// Spec is everything one profile allows beyond the platform's fixed
// allowances. Its paths are host paths as Seatbelt compares them: a rule
// matches the real path of what a process opens or executes, every
// symbolic link resolved, so a tree reached through a link is listed by
// both names (Prepare works them out).
type Spec struct {
	// ExecFiles are programs a process may execute: the resolved
	// program, by its path and its real path, and the real paths of the
	// links in the search path's directories.
	ExecFiles []string
	// ExecTrees are the directories of the command search path.
	ExecTrees []string
	// NoExec are set-id programs inside ExecTrees, refused by name: they
	// would run with another user's rights.
	NoExec []string
	// Read are the trees shown read-only: the policy's readOnly and the
	// search path (its programs' scripts and libraries are read).
	Read []string
	// Write are the trees a process may write: the session's private
	// copies (workspace, scratch, findings) and the policy's readWrite.
	Write []string
	// Hide are host paths no process may read or write, though they lie
	// inside a tree above (the policy file, the audit log).
	Hide []string
	// Traverse are directories whose own metadata may be read (stat, no
	// listing): the ancestors of every tree above, which realpath and
	// getcwd walk.
	Traverse []string
	// ProxyPort is the egress proxy's port on loopback, the only address
	// a process may connect to; 0 allows no network at all.
	ProxyPort int
	// Trustd allows the certificate trust agent (WeakerTrustd).
	Trustd bool
}

// Check refuses a Spec whose paths a profile cannot hold: each must be
// clean and absolute, valid UTF-8 with no control character, quote or
// backslash (the few a string of the profile could not carry plainly).
func (s Spec) Check() error {
	for _, group := range []struct {
		name string
		ps   []string
	}{{"exec", s.ExecFiles}, {"exec", s.ExecTrees}, {"set-id", s.NoExec}, {"read", s.Read},
		{"write", s.Write}, {"hide", s.Hide}, {"traverse", s.Traverse}} {
		for _, p := range group.ps {
			if err := checkPath(p); err != nil {
				return fmt.Errorf("seatbelt: %s path %q: %w", group.name, p, err)
			}
		}
	}
	if s.ProxyPort < 0 || s.ProxyPort > 65535 {
		return fmt.Errorf("seatbelt: proxy port %d: want 1 to 65535, or 0 for no network", s.ProxyPort)
	}
	return nil
}

func checkPath(p string) error {
	switch {
	case !path.IsAbs(p) || path.Clean(p) != p:
		return fmt.Errorf("want a clean absolute path")
	case !utf8.ValidString(p):
		return fmt.Errorf("not valid UTF-8")
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '"' || r == '\\' }):
		return fmt.Errorf("holds a control character, a quote or a backslash, which airlock does not write into a profile")
	}
	return nil
}

// Profile is the SBPL text of s: deny by default, then each allowance
// with the reason for it. It fails when s does not pass Check; what it
// returns passes Parse.
func Profile(s Spec) (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	var b builder
	b.line("(version 1)")
	b.comment("airlock's profile for one command (docs/sandbox.md, \"macOS\"). Deny by default:")
	b.comment("every allowance below says what needs it, and a later rule overrides an earlier one.")
	b.line("(deny default)")

	b.section("Processes. Tools run children; RLIMIT_NPROC and airlock's watch bound them.")
	b.line("(allow process-fork)")
	b.comment("Execute only the resolved program and the policy's command search path.")
	b.rule("allow process-exec", literals(s.ExecFiles), subpaths(s.ExecTrees))
	b.comment("Set-id programs on the search path keep their bit: refused by name.")
	b.rule("deny process-exec", literals(s.NoExec))
	b.comment("Signals and process details of the sandbox's own processes only.")
	b.line("(allow signal (target same-sandbox))")
	b.line("(allow process-info* (target same-sandbox))")

	b.section("Reading. The root and the links /etc, /tmp and /var themselves, and the ancestors of every")
	b.comment("tree below (stat only, no listing: realpath and getcwd walk them).")
	b.rule("allow file-read-metadata file-test-existence", literals(merge(platformTraverse, s.Traverse)))
	b.comment("Listing / shows its entries' names only.")
	b.line(`(allow file-read-data (literal "/"))`)
	b.comment("The system's own trees: dyld's shared cache and the frameworks, libSystem, zoneinfo and")
	b.comment("terminfo. Nothing of any user's: no /Users, no /Volumes, no /private/var but time zones.")
	b.rule("allow file-read* file-test-existence", subpaths(platformRead))
	b.comment("The policy's readOnly trees and the command search path.")
	b.rule("allow file-read* file-test-existence", subpaths(s.Read), literals(s.ExecFiles))
	b.comment("Devices: the harmless ones, and a process's own descriptors (/dev/fd).")
	b.rule("allow file-read* file-test-existence", literals(readDevices))
	b.line(`(allow file-read-metadata (literal "/dev"))`)
	b.line(`(allow file-read-data file-write-data file-ioctl (literal "/dev/null"))`)
	b.line(`(allow file-read-data file-write-data (subpath "/dev/fd"))`)
	b.comment("dyld maps libraries executable: only from what is read-only above, never from a copy.")
	b.rule("allow file-map-executable", subpaths(platformRead), subpaths(s.Read), literals(s.ExecFiles), subpaths(s.ExecTrees))

	b.section("Writing: the session's private copies and the policy's readWrite trees, nothing else.")
	b.rule("allow file-read* file-test-existence file-write*", subpaths(s.Write))
	b.comment("Unix sockets made in them (Python's multiprocessing, test servers): both ends inside.")
	b.rule("allow network-bind network-inbound network-outbound", subpaths(s.Write))
	b.comment("Hidden host files: the policy, the audit log.")
	b.rule("deny file-read* file-test-existence file-write*", subpaths(s.Hide))

	b.section("Network. Seatbelt cannot name a remote address: egress goes through the proxy or nowhere.")
	if s.ProxyPort > 0 {
		b.line(fmt.Sprintf(`(allow network-outbound (remote ip "localhost:%d"))`, s.ProxyPort))
	} else {
		b.comment("This command has no proxy: no network at all.")
	}

	b.section("Mach services, by name: user and group lookups (getpwuid, getgrgid, id) only. Not the keychain,")
	b.comment("preferences, pasteboard, Launch Services or Apple events (each a way out of the sandbox).")
	b.rule("allow mach-lookup", globalNames(machNames))
	if s.Trustd {
		b.comment("Weaker mode " + WeakerTrustd + ": certificate trust evaluation (Go, Security.framework).")
		b.comment("trustd fetches OCSP, CRLs and issuers on a process's behalf: egress that bypasses the proxy.")
		b.line(`(allow mach-lookup (global-name "com.apple.trustd.agent"))`)
	}

	b.section("sysctl, by name: what runtimes read to size thread pools, pick instructions and")
	b.comment("report the system (kern.hostname: macOS has no UTS namespace; the host's name is seen).")
	b.rule("allow sysctl-read", sysctlRules())

	b.section("POSIX semaphores (Python's multiprocessing locks). No shared memory, no SysV IPC, no pty.")
	b.line("(allow ipc-posix-sem)")
	return b.String(), nil
}

// platformTraverse are the root and the links to the system's private
// directories; Prepare adds every tree's ancestors.
var platformTraverse = []string{"/", "/etc", "/tmp", "/var"}

// platformRead are the system trees every program needs: dyld's shared
// cache and the frameworks (/System), libSystem and dyld (/usr/lib),
// locale, zoneinfo and terminfo (/usr/share), Apple's libraries outside
// /System (/Library/Apple), and the time zone database /etc/localtime
// links into (/private/var/db/timezone).
var platformRead = []string{"/System", "/usr/lib", "/usr/share", "/Library/Apple", "/private/var/db/timezone"}

// readDevices are the devices any process may read; /dev/null is also
// written.
var readDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/stderr"}

// machNames are the Mach services every profile allows: directory
// lookups of users and groups (libinfo) and of group membership.
var machNames = []string{"com.apple.system.opendirectoryd.libinfo", "com.apple.system.opendirectoryd.membership"}

// sysctlNames and sysctlPrefixes are the sysctls a process may read:
// the CPU's and memory's shape and features, the system's name and
// version, and the limits of exec and descriptors.
var (
	sysctlNames = []string{
		"hw.activecpu", "hw.byteorder", "hw.cacheconfig", "hw.cachelinesize", "hw.cachelinesize_compat",
		"hw.cpufamily", "hw.cpusubtype", "hw.cputype", "hw.l1dcachesize", "hw.l1dcachesize_compat",
		"hw.l1icachesize", "hw.l1icachesize_compat", "hw.l2cachesize", "hw.l2cachesize_compat",
		"hw.l3cachesize", "hw.l3cachesize_compat", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine",
		"hw.memsize", "hw.ncpu", "hw.nperflevels", "hw.packages", "hw.pagesize", "hw.pagesize_compat",
		"hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency_compat", "hw.vectorunit",
		"kern.argmax", "kern.hostname", "kern.maxfilesperproc", "kern.osproductversion", "kern.osrelease",
		"kern.ostype", "kern.osvariant_status", "kern.osversion", "kern.usrstack64", "kern.version",
		"sysctl.proc_cputype",
	}
	sysctlPrefixes = []string{"hw.optional.", "hw.perflevel", "machdep.cpu."}
)

func sysctlRules() []string {
	var out []string
	for _, n := range sysctlNames {
		out = append(out, fmt.Sprintf("(sysctl-name %s)", quote(n)))
	}
	for _, n := range sysctlPrefixes {
		out = append(out, fmt.Sprintf("(sysctl-name-prefix %s)", quote(n)))
	}
	return out
}

// quote writes s as a profile's string. Spec.Check has refused what
// would need an escape, and the fixed names need none: the text goes in
// as it is (strconv.Quote's \u escapes are not SBPL's).
func quote(s string) string { return `"` + s + `"` }

func literals(ps []string) []string    { return filtersOf("literal", ps) }
func subpaths(ps []string) []string    { return filtersOf("subpath", ps) }
func globalNames(ns []string) []string { return filtersOf("global-name", ns) }

func filtersOf(name string, vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("(%s %s)", name, quote(v))
	}
	return out
}

// merge returns a and then the entries of b that a lacks.
func merge(a, b []string) []string {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// builder writes a profile's lines.
type builder struct{ strings.Builder }

func (b *builder) line(s string) { b.WriteString(s + "\n") }

func (b *builder) comment(s string) { b.line("; " + s) }

func (b *builder) section(s string) {
	b.line("")
	b.comment(s)
}

// rule writes (head filters...) one filter a line, or nothing when there
// is no filter: a rule without filters would cover every object.
func (b *builder) rule(head string, groups ...[]string) {
	var fs []string
	for _, g := range groups {
		for _, f := range g {
			if !slices.Contains(fs, f) {
				fs = append(fs, f)
			}
		}
	}
	if len(fs) == 0 {
		return
	}
	b.line("(" + head)
	for i, f := range fs {
		end := ""
		if i == len(fs)-1 {
			end = ")"
		}
		b.line("  " + f + end)
	}
}
