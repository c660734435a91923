package selftest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// privilegeAttempts try to gain what the sandbox took away.
func privilegeAttempts() []attempt {
	pr := FamilyPrivilege
	p := toolPayload
	seccomp := func(name, what, errno string, args ...string) attempt {
		return payloadAttempt(pr, name, ControlSeccomp, what, p, taskNone, filtered(errno), args...)
	}
	return []attempt{
		seccomp("ptrace-child", "ptrace(PTRACE_ATTACH) on a child of its own", "EPERM", "ptrace-child"),
		seccomp("process-vm-readv", "process_vm_readv on a child of its own", "EPERM", "vm-readv-child"),
		seccomp("mount", "mount a tmpfs over /tmp", "EPERM", "mount"),
		seccomp("unshare", "unshare(CLONE_NEWNS)", "EPERM", "unshare"),
		seccomp("clone-newuser", "a child in a new user namespace (clone with CLONE_NEWUSER)", "EPERM", "clone-newuser"),
		seccomp("setns", "setns into a network namespace", "EPERM", "setns"),
		seccomp("chroot", "chroot(\"/tmp\")", "EPERM", "chroot"),
		seccomp("keyctl", "join a named session keyring (the keyrings are not namespaced)", "EPERM", "keyctl"),
		seccomp("add-key", "add a key to a keyring", "EPERM", "add-key"),
		seccomp("bpf", "create an eBPF map", "EPERM", "bpf"),
		seccomp("perf-event-open", "perf_event_open on itself", "EPERM", "perf"),
		seccomp("io-uring", "io_uring_setup", "ENOSYS", "io-uring"),
		seccomp("userfaultfd", "userfaultfd (user-mode only, which the kernel allows)", "EPERM", "userfaultfd"),
		seccomp("clone3", "clone3, whose flags no filter can read", "ENOSYS", "clone3"),
		seccomp("personality", "personality(ADDR_NO_RANDOMIZE)", "EPERM", "personality"),
		seccomp("tiocsti", "TIOCSTI on stdin, typing into a terminal (bubblewrap CVE-2017-5226)", "EPERM", "tiocsti"),
		seccomp("open-by-handle", "open_by_handle_at on /etc/passwd (the \"shocker\" escape)", "EPERM", "open-by-handle"),
		foreignAttempt("int80", "an i386 system call (int $0x80) from amd64 code"),
		foreignAttempt("x32", "an x32 system call (getpid | __X32_SYSCALL_BIT)"),
		payloadAttempt(pr, "setuid-root", ControlUserNS, "setuid(0): uid 0 is not mapped in the sandbox's user namespace",
			p, taskNone, errnoIs("EINVAL"), "setuid-root"),
		payloadAttempt(pr, "capset", ControlCapabilities, "raise every capability with capset",
			p, taskNone, detailIs("CapBnd", "0000000000000000", errnoIs("EPERM")), "capset"),
		payloadAttempt(pr, "proc1-ns", ControlNonDumpable, "open the init's namespaces under /proc/1/ns",
			p, taskNone, errnoIs("EACCES"), "open-any", "/proc/1/ns/net", "/proc/1/ns/mnt", "/proc/1/ns/user"),
		payloadAttempt(pr, "signal-init", ControlInitSignals, "every signal, 1 to 64, sent to the sandbox's init (pid 1) by kill, rt_sigqueueinfo, pidfd_send_signal and a pipe's F_SETSIG",
			p, taskNone, initSurvived, "signal-init"),
		{family: pr, name: "setuid-system-binary", control: ControlNoSuid, sandboxed: true,
			what: "run a root-owned setuid binary of the host (su, waiting for a password) and sample its effective uid",
			plan: planSetuidSystem},
		{family: pr, name: "setuid-workspace", control: ControlCopyIn, sandboxed: true,
			what: "run a root-owned setuid copy of id brought in through the workspace",
			plan: planSetuidWorkspace},
	}
}

// foreignAttempt runs a system call of a foreign ABI in a child, which
// the filter must kill with SIGSYS.
func foreignAttempt(abi, what string) attempt {
	return attempt{family: FamilyPrivilege, name: "foreign-abi-" + abi, control: ControlSeccomp, what: what, sandboxed: true,
		plan: func(*fixtures) (*plan, error) {
			if runtime.GOARCH != "amd64" {
				return settled(skipped("no foreign ABI is reachable from " + runtime.GOARCH + " code by the payload")), nil
			}
			return &plan{req: payloadRequest(toolPayload, taskNone, "foreign-abi", abi), judge: judgeForeign}, nil
		}}
}

func judgeForeign(o *observation) verdict {
	rep, v := ran(o)
	switch {
	case v != nil:
		return *v
	case rep.Succeeded:
		return escaped(rep.Evidence)
	case rep.Detail["signal"] == "SIGSYS":
		return contained("killed by SIGSYS (seccomp: foreign architecture): " + rep.Evidence)
	}
	return broken("not killed by SIGSYS: " + rep.Evidence)
}

// setuidCandidates are root-owned setuid binaries found on Debian and
// Ubuntu, with arguments that keep them running (waiting on stdin).
var setuidCandidates = [][]string{
	{"/usr/bin/su", "root"},
	{"/bin/su", "root"},
	{"/usr/bin/newgrp", "root"},
}

func planSetuidSystem(*fixtures) (*plan, error) {
	for _, c := range setuidCandidates {
		st, err := os.Stat(c[0])
		if err != nil || st.Mode()&os.ModeSetuid == 0 {
			continue
		}
		return &plan{req: payloadRequest(toolPayload, taskNone, append([]string{"exec-setuid"}, c...)...),
			judge: judgeSetuid(true)}, nil
	}
	return settled(broken("no setuid binary to try: none of su, newgrp is installed setuid on this host")), nil
}

// planSetuidWorkspace puts a copy of id, setuid and (as root) owned by
// root, in the workspace.
func planSetuidWorkspace(fx *fixtures) (*plan, error) {
	ws, err := fx.dir("ws")
	if err != nil {
		return nil, err
	}
	dst := filepath.Join(ws, "id")
	if err := copyExecutable("/usr/bin/id", dst); err != nil {
		return nil, fmt.Errorf("copy /usr/bin/id: %w", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dst, 0, 0); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(dst, 0o4755|os.ModeSetuid); err != nil {
		return nil, err
	}
	req := withWorkspace(payloadRequest(toolPayload, taskNone, "exec-setuid", "/workspace/id"), ws)
	return &plan{req: req, judge: judgeSetuid(false)}, nil
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// judgeSetuid: the binary ran and never had effective uid 0. For a host
// binary the setuid bit is visible (so only nosuid and no_new_privs stop
// it); for the workspace copy the copy-in must have dropped the bit.
func judgeSetuid(hostBinary bool) func(o *observation) verdict {
	return func(o *observation) verdict {
		rep, v := ran(o)
		switch {
		case v != nil:
			return *v
		case rep.Succeeded:
			return escaped(rep.Evidence + "; output: " + rep.Detail["output"])
		case rep.Errno != "":
			return broken("could not run it: " + rep.Evidence)
		case hostBinary && rep.Detail["euids"] == "":
			return broken("it exited before its uid could be sampled: " + rep.Evidence)
		case !hostBinary && !strings.Contains(rep.Detail["output"], "uid="):
			return broken("id did not print its ids: " + rep.Detail["output"])
		case hostBinary && rep.Detail["setuidBit"] != "true":
			return broken("the binary shows no setuid bit inside, so nosuid and no_new_privs were not tested: " + rep.Evidence)
		case hostBinary && rep.Detail["noNewPrivs"] != "1":
			return broken("no_new_privs is not set: " + rep.Evidence)
		case hostBinary && !slices.Contains(strings.Split(rep.Detail["mountOptions"], ","), "nosuid"):
			return broken("the binary's mount is not nosuid (" + rep.Detail["mountOptions"] + "): " + rep.Evidence)
		case !hostBinary && rep.Detail["setuidBit"] != "false":
			return broken("the copy kept its setuid bit (mode " + rep.Detail["mode"] + "), so it was not the copy-in that stopped it: " + rep.Evidence)
		case !hostBinary:
			return contained(fmt.Sprintf("the copy lost its setuid bit (mode %s inside) and ran as: %s", rep.Detail["mode"], rep.Detail["output"]))
		}
		return contained(rep.Evidence)
	}
}

// initSurvived judges signal-init: the init must be there when the
// payload reports, and the run must end as the payload did, with no
// escape suspected (an init that died on its own is one).
func initSurvived(o *observation) verdict {
	rep, v := ran(o)
	switch {
	case v != nil:
		return *v
	case rep.Succeeded:
		return escaped(rep.Evidence)
	case o.res.EscapeSuspected != "":
		return escaped(o.res.EscapeSuspected)
	case o.res.ExitCode != 0:
		return broken(fmt.Sprintf("the init survived, but the run exited %d: %s", o.res.ExitCode, rep.Evidence))
	}
	return contained(rep.Evidence)
}
