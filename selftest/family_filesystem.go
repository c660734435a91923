package selftest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// filesystemAttempts reach for host files, write where nothing may be
// written, make devices and links, and look for descriptors from outside.
func filesystemAttempts() []attempt {
	fs := FamilyFilesystem
	p := toolPayload
	return []attempt{
		secretAttempt("host-secret-tmp", "a canary secret in the host's temporary directory", func(fx *fixtures) string { return fx.secretTmp }, ""),
		secretAttempt("host-secret-var", "a canary secret under the host's /var/tmp", func(fx *fixtures) string { return fx.secretVar }, ""),
		secretAttempt("proc1-root", "the host's canary secret through /proc/1/root", func(fx *fixtures) string { return fx.secretTmp }, "/proc/1/root"),
		payloadAttempt(fs, "proc1-root-list", ControlNonDumpable, "listing /proc/1/root, the init's root",
			p, taskNone, errnoIs("EACCES"), "list-dir", "/proc/1/root/"),
		payloadAttempt(fs, "proc1-exe-write", ControlNonDumpable, "opening /proc/1/exe (the init's binary) for writing (runc CVE-2019-5736)",
			p, taskNone, errnoIs("EACCES"), "open-write", "/proc/1/exe"),
		payloadAttempt(fs, "proc1-exe-read", ControlNonDumpable, "opening /proc/1/exe (the init's binary) for reading",
			p, taskNone, errnoIs("EACCES"), "open-any", "/proc/1/exe"),
		payloadAttempt(fs, "self-exe-write", ControlReadOnly, "opening /proc/self/exe (airlock's binary inside) for writing",
			p, taskNone, errnoIs("EROFS", "ETXTBSY"), "open-write", "/proc/self/exe"),
		payloadAttempt(fs, "airlock-binary-write", ControlReadOnly, "overwriting /.airlock/self, airlock's binary inside",
			p, taskNone, errnoIs("EROFS"), "write-file", "/.airlock/self"),
		payloadAttempt(fs, "write-usr", ControlReadOnly, "writing /usr/bin/airlock-selftest-backdoor",
			p, taskNone, errnoIs("EROFS"), "write-file", "/usr/bin/airlock-selftest-backdoor"),
		payloadAttempt(fs, "write-etc-cron", ControlReadOnly, "writing /etc/cron.d/airlock-selftest",
			p, taskNone, errnoIs("EROFS"), "write-file", "/etc/cron.d/airlock-selftest"),
		payloadAttempt(fs, "write-root", ControlReadOnly, "writing /airlock-selftest at the root",
			p, taskNone, errnoIs("EROFS"), "write-file", "/airlock-selftest"),
		payloadAttempt(fs, "write-proc-sys", ControlUserNS, "writing /proc/sys/kernel/core_pattern (owned by the host's root)",
			p, taskNone, errnoIs("EACCES"), "write-file", "/proc/sys/kernel/core_pattern", "|/tmp/x"),
		payloadAttempt(fs, "write-proc-self", ControlLandlock, "writing /proc/self/comm, which the file's owner may write: only Landlock refuses",
			p, taskNone, errnoIs("EACCES"), "write-file", "/proc/self/comm", "pwned"),
		ifHostHas("/proc/sysrq-trigger", payloadAttempt(fs, "write-sysrq", ControlUserNS, "writing /proc/sysrq-trigger (crash or reboot the host)",
			p, taskNone, errnoIs("EACCES"), "write-file", "/proc/sysrq-trigger", "c")),
		ifHostHas("/proc/kcore", payloadAttempt(fs, "read-kcore", ControlUserNS, "reading /proc/kcore, the host's physical memory",
			p, taskNone, errnoIs("EACCES"), "read-file", "/proc/kcore")),
		payloadAttempt(fs, "host-environment", ControlCleanEnv, "the host's environment variables (tokens, agent sockets) inside",
			p, taskNone, judgeEnviron, "environ"),
		payloadAttempt(fs, "read-shadow", ControlUserNS, "reading /etc/shadow",
			p, taskNone, errnoIs("EACCES"), "read-file", "/etc/shadow"),
		payloadAttempt(fs, "list-root-home", ControlMountNS, "listing /root",
			p, taskNone, errnoIs("ENOENT"), "list-dir", "/root"),
		payloadAttempt(fs, "list-sys", ControlMountNS, "listing /sys (no sysfs inside)",
			p, taskNone, errnoIs("ENOENT"), "list-dir", "/sys/kernel"),
		payloadAttempt(fs, "mknod-block", ControlCapabilities, "making a block device node /tmp/sda (8,0)",
			p, taskNone, errnoIs("EPERM"), "mknod", "/tmp/sda", "b", "8", "0"),
		payloadAttempt(fs, "mknod-char", ControlCapabilities, "making /tmp/mem, a character device node (1,1) for physical memory",
			p, taskNone, errnoIs("EPERM"), "mknod", "/tmp/mem", "c", "1", "1"),
		payloadAttempt(fs, "mknod-dev", ControlReadOnly, "making a device node in /dev",
			p, taskNone, errnoIs("EROFS"), "mknod", "/dev/sda", "b", "8", "0"),
		payloadAttempt(fs, "open-devices", ControlMinimalDev, "opening host devices: disks, memory, the kernel log, terminals",
			p, taskNone, errnoIs("ENOENT"), "open-any", "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/mem", "/dev/kmem",
			"/dev/port", "/dev/kmsg", "/dev/tty", "/dev/console", "/dev/fuse", "/dev/net/tun"),
		payloadAttempt(fs, "hardlink-etc", ControlMountNS, "hard-linking /etc/passwd into /tmp",
			p, taskNone, errnoIs("EXDEV"), "link", "/etc/passwd", "/tmp/passwd"),
		payloadAttempt(fs, "hardlink-binary", ControlMountNS, "hard-linking airlock's binary into /tmp",
			p, taskNone, errnoIs("EXDEV"), "link", "/.airlock/self", "/tmp/self"),
		{family: fs, name: "workspace-symlink-file", control: ControlCopyIn, sandboxed: true,
			what: "a workspace symlink to the host's canary secret, read inside", plan: planWorkspaceLink(false)},
		{family: fs, name: "workspace-symlink-dir", control: ControlCopyIn, sandboxed: true,
			what: "a workspace symlink to the host directory holding the canary secret", plan: planWorkspaceLink(true)},
		{family: fs, name: "workspace-swap-race", control: ControlCopyIn, sandboxed: true,
			what: "a workspace directory swapped with a symlink to the host's secrets while it is copied in (runc CVE-2021-30465 class)",
			plan: planSwapRace},
		{family: fs, name: "findings-links", control: ControlCopyOut, sandboxed: true,
			what: "symlinks in /findings to host files, for the copy-out to follow", plan: planFindingsLinks},
		{family: fs, name: "findings-hooks", control: ControlCopyOut, sandboxed: true,
			what: "a git hook, a setuid script and a bare repository left in /findings, to run on the host", plan: planFindingsHooks},
		payloadAttempt(fs, "inherited-fds", ControlFDHygiene, "descriptors beyond stdio inherited from outside (runc CVE-2024-21626)",
			p, taskNone, notSucceeded, "open-fds"),
		identityAttempt("host-resolver", "/etc/resolv.conf"),
		identityAttempt("host-hosts", "/etc/hosts"),
		identityAttempt("host-hostname", "/etc/hostname"),
		identityAttempt("host-machine-id", "/etc/machine-id"),
		identityAttempt("host-boot-id", "/proc/sys/kernel/random/boot_id"),
		identityAttempt("host-cmdline", "/proc/cmdline"),
	}
}

// identityAttempt reads a file that, seen from inside with the host's
// content, would name the host's resolver, names or ids: the sandbox's
// own version (or nothing) must show instead.
func identityAttempt(name, path string) attempt {
	return attempt{family: FamilyFilesystem, name: name, control: ControlOwnIdentity, sandboxed: true,
		what: "reading the host's " + path + " through the bound /etc or /proc",
		plan: func(*fixtures) (*plan, error) {
			host, _ := os.ReadFile(path)
			return &plan{req: payloadRequest(toolPayload, taskNone, "read-file", path), judge: func(o *observation) verdict {
				rep, v := ran(o)
				switch {
				case v != nil:
					return *v
				case !rep.Succeeded:
					return contained(rep.Errno + ": nothing of the host's shows: " + rep.Evidence)
				case len(host) > 0 && rep.Detail["head"] == string(host[:min(len(host), 256)]):
					return escaped("the host's " + path + " shows inside: " + rep.Evidence)
				}
				return contained(fmt.Sprintf("the sandbox's own %s (%q), not the host's", path, tail(rep.Detail["head"], 60)))
			}}, nil
		}}
}

// ifHostHas skips a when the host's kernel has no file at path (it was
// built without it), so that there is nothing to reach inside either.
func ifHostHas(path string, a attempt) attempt {
	real := a.plan
	a.plan = func(fx *fixtures) (*plan, error) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return settled(skipped("the host's kernel has no " + path + " (built without it): nothing to reach")), nil
		}
		return real(fx)
	}
	return a
}

// secretAttempt reads a canary secret at a host path (under prefix).
func secretAttempt(name, what string, path func(*fixtures) string, prefix string) attempt {
	control, want := ControlMountNS, "ENOENT"
	if prefix != "" {
		control, want = ControlNonDumpable, "EACCES"
	}
	return attempt{family: FamilyFilesystem, name: name, control: control, what: "reading " + what, sandboxed: true,
		plan: func(fx *fixtures) (*plan, error) {
			return &plan{req: payloadRequest(toolPayload, taskNone, "read-file", prefix+path(fx)),
				judge: notSecret(fx.secret, errnoIs(want))}, nil
		}}
}

// planWorkspaceLink makes a workspace with a symlink to the host's
// secret (or its directory): the copy-in must copy the link as a link,
// which then leads nowhere inside.
func planWorkspaceLink(dir bool) func(fx *fixtures) (*plan, error) {
	return func(fx *fixtures) (*plan, error) {
		ws, err := fx.dir("ws")
		if err != nil {
			return nil, err
		}
		target, inside := fx.secretTmp, "/workspace/secret"
		if dir {
			target, inside = filepath.Dir(fx.secretTmp), "/workspace/secret/"+filepath.Base(fx.secretTmp)
		}
		if err := os.Symlink(target, filepath.Join(ws, "secret")); err != nil {
			return nil, err
		}
		return &plan{req: withWorkspace(payloadRequest(toolPayload, taskNone, "read-file", inside), ws),
			judge: notSecret(fx.secret, errnoIs("ENOENT"))}, nil
	}
}

// planFindingsLinks: the payload leaves symlinks (and tries a hard link)
// in /findings; the host's findings directory must then hold the
// regular file only, and nothing of the host's files.
func planFindingsLinks(fx *fixtures) (*plan, error) {
	out, err := fx.dir("findings")
	if err != nil {
		return nil, err
	}
	req := payloadRequest(toolPayload, taskNone, "findings-links", fx.secretVar)
	req.Findings = out
	return &plan{req: req, judge: func(o *observation) verdict {
		if _, v := ran(o); v != nil {
			return *v
		}
		var seen []string
		err := filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
			if err != nil || p == out {
				return err
			}
			rel, _ := filepath.Rel(out, p)
			switch {
			case fi.Mode()&os.ModeSymlink != 0:
				return fmt.Errorf("%s is a symlink on the host", rel)
			case fi.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				if strings.Contains(string(b), fx.secret) || strings.Contains(string(b), "root:") {
					return fmt.Errorf("%s holds a host file's content", rel)
				}
			}
			seen = append(seen, rel)
			return nil
		})
		switch {
		case err != nil && strings.Contains(err.Error(), "on the host") || err != nil && strings.Contains(err.Error(), "content"):
			return escaped(err.Error())
		case err != nil:
			return broken("read the findings: " + err.Error())
		case strings.Join(seen, ",") != "report.txt":
			return broken("the findings hold " + strings.Join(seen, ",") + ", want report.txt alone")
		case o.res.ExitCode != enforcer.ExitFindings:
			return broken(fmt.Sprintf("the links were left out, but the run exited %d, not %d (findings not all kept)", o.res.ExitCode, enforcer.ExitFindings))
		}
		return contained(fmt.Sprintf("only report.txt was copied out; the links stayed inside, reported, and the run exited %d", o.res.ExitCode))
	}}, nil
}

// allowedEnv reports whether a run's environment may hold the variable
// name: airlock's own minimal set (sandbox.BaseEnv), the proxy
// variables, and the battery's token.
func allowedEnv(name string) bool {
	return name == envToken || sandbox.IsProxyVar(name) || slices.ContainsFunc(sandbox.BaseEnv(nil), func(kv string) bool {
		n, _, _ := strings.Cut(kv, "=")
		return n == name
	})
}

// judgeEnviron: nothing of the caller's environment reached the run.
func judgeEnviron(o *observation) verdict {
	rep, v := ran(o)
	if v != nil {
		return *v
	}
	var extra []string
	for _, n := range strings.Split(rep.Detail["names"], ",") {
		if n != "" && !allowedEnv(n) {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		return escaped("variables from outside reached the run: " + strings.Join(extra, ", "))
	}
	return contained("only airlock's own variables: " + rep.Detail["names"])
}

// planSwapRace: while the workspace is copied in, the host flips
// "cache" between a real directory (holding a decoy) and a symlink to
// the directory of the host's secret, as fast as it can. The copy must
// never follow the link: inside, cache/credentials is the decoy, a
// dangling link, or absent; a copy-in that refuses the moving tree is
// contained too.
func planSwapRace(fx *fixtures) (*plan, error) {
	ws, err := fx.dir("ws")
	if err != nil {
		return nil, err
	}
	dir, link := filepath.Join(ws, "cache"), filepath.Join(ws, "cache-link")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "credentials"), []byte("decoy\n"), 0o644); err != nil {
		return nil, err
	}
	// Enough files that the copy takes a while to walk.
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("file-%03d", i)), []byte("x"), 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.Symlink(filepath.Dir(fx.secretTmp), link); err != nil {
		return nil, err
	}
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			if swap(dir, link) == nil {
				n++
			}
		}
	}()
	flips := -1
	finish := func() {
		if flips < 0 {
			close(stop)
			flips = <-done
		}
	}
	req := withWorkspace(payloadRequest(toolPayload, taskNone, "read-file", "/workspace/cache/credentials"), ws)
	return &plan{req: req, cleanup: []func(){finish}, judge: notSecret(fx.secret, func(o *observation) verdict {
		finish()
		if o.res.ExitCode == enforcer.ExitSetup && strings.Contains(fmt.Sprint(o.err), "workspace") {
			return contained(fmt.Sprintf("the copy-in refused the moving tree (%d swaps): %v", flips, o.err))
		}
		rep, v := ran(o)
		switch {
		case v != nil:
			return *v
		case rep.Succeeded && strings.TrimSpace(rep.Detail["head"]) == "decoy":
			return contained(fmt.Sprintf("the copy took the real directory (%d swaps during the run): read the decoy", flips))
		case !rep.Succeeded && (rep.Errno == "ENOENT" || rep.Errno == "ENOTDIR"):
			return contained(fmt.Sprintf("the copy took the link as a link (%d swaps during the run): %s", flips, rep.Evidence))
		}
		return broken(fmt.Sprintf("unexpected read of the swapped path (%d swaps): %s", flips, rep.Evidence))
	})}, nil
}
