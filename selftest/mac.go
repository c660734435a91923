package selftest

import (
	"fmt"
	"os"
	"path/filepath"
)

// The macOS battery: the attacks that matter on a Mac, where the sandbox
// is a Seatbelt profile and airlock's watch rather than namespaces and
// cgroups (docs/sandbox.md, "macOS"). Its payloads are package payload's
// mac-… (payload/mac.go); the command gate's attempts are the Linux
// battery's. It is written, and compiled, everywhere; it runs on a Mac.

// The controls of the macOS battery.
const (
	// ControlSeatbelt is the command's generated profile.
	ControlSeatbelt = "seatbelt"
	// ControlWatch is airlock's watch of the command's tree (footprint,
	// processes) with RLIMIT_NPROC under it.
	ControlWatch = "watch"
)

// macFamilies are the macOS battery's attempts, family by family.
func macFamilies() [][]attempt {
	return [][]attempt{commandAttempts(), macNetwork(), macMetadata(), macFilesystem(), macPrivilege(), macResources()}
}

// macFilesystem: writes outside the copies, reads of the user's files.
func macFilesystem() []attempt {
	fs := FamilyFilesystem
	home, _ := os.UserHomeDir()
	eperm := errnoIs("EPERM")
	return []attempt{
		macPayload(fs, "write-home", "a new file in the user's home directory", eperm, "mac-write", home),
		macPayload(fs, "write-host-tmp", "a new file in the host's /tmp", eperm, "mac-write", "/private/tmp"),
		{family: fs, name: "write-host-temp", control: ControlSeatbelt, what: "a new file in the host's temporary directory, beside the session's copies", sandboxed: true,
			plan: func(fx *fixtures) (*plan, error) {
				return &plan{req: payloadRequest(toolPayload, taskNone, "mac-write", fx.root), judge: eperm}, nil
			}},
		{family: fs, name: "read-secret", control: ControlSeatbelt, what: "a canary secret in the host's temporary directory", sandboxed: true,
			plan: func(fx *fixtures) (*plan, error) {
				return &plan{req: payloadRequest(toolPayload, taskNone, "mac-read", fx.secretTmp), judge: notSecret(fx.secret, eperm)}, nil
			}},
		macPayload(fs, "read-ssh", "the user's ~/.ssh", errnoIs("EPERM", "ENOENT"), "mac-read", filepath.Join(home, ".ssh")),
		{family: fs, name: "hardlink-secret", control: ControlSeatbelt, what: "a hard link in the workspace copy to a canary secret of the host's, read through the copy (Seatbelt decides by path)", sandboxed: true,
			plan: func(fx *fixtures) (*plan, error) {
				return &plan{req: payloadRequest(toolPayload, taskNone, "mac-hardlink", fx.secretTmp, "linked-secret"), judge: notSecret(fx.secret, eperm)}, nil
			}},
	}
}

// macNetwork: connections around the proxy.
func macNetwork() []attempt {
	nw := FamilyNetwork
	url := func(addr string) []string { return []string{"mac-get-noproxy", "http://" + addr + "/"} }
	return []attempt{
		macCanary(nw, "tcp4-host-loopback", "a direct TCP connection to a canary on the host's 127.0.0.1", tcp4, with("mac-connect")),
		macCanary(nw, "tcp6-host-loopback", "a direct TCP connection to a canary on the host's [::1]", tcp6, with("mac-connect")),
		macCanary(nw, "no-proxy-bypass", "an HTTP client told NO_PROXY=*, so that it connects directly instead of through the proxy", tcp4, url),
	}
}

// macMetadata: the cloud metadata address, directly and through the proxy.
func macMetadata() []attempt {
	md := FamilyMetadata
	return []attempt{
		macPayload(md, "direct", "a direct TCP connection to 169.254.169.254:80", errnoIs("EPERM"), "mac-connect", "169.254.169.254:80"),
		payloadAttempt(md, "through-proxy", ControlEgressGate, "GET http://169.254.169.254/latest/meta-data/ through the proxy",
			toolPayload, taskWild, egressRefused("always blocked"), "mac-get", "http://169.254.169.254/latest/meta-data/"),
	}
}

// macPrivilege: programs outside the search path, set-id programs,
// Launch Services.
func macPrivilege() []attempt {
	pv := FamilyPrivilege
	return []attempt{
		macPayload(pv, "exec-outside-path", "a program outside the command search path (/usr/libexec/PlistBuddy)", errnoIs("EPERM"), "mac-exec", "/usr/libexec/PlistBuddy", "-h"),
		macPayload(pv, "exec-setuid", "a set-id program on the search path (/usr/bin/sudo)", errnoIs("EPERM"), "mac-exec", "/usr/bin/sudo", "-n", "true"),
		macPayload(pv, "launch-services", "an application opened through Launch Services (open -a Calculator), which would run outside the sandbox", notSucceeded, "mac-exec", "/usr/bin/open", "-a", "Calculator"),
	}
}

// macResources: the bombs, and the wall clock.
func macResources() []attempt {
	rs := FamilyResources
	return []attempt{
		slowAttempt(rs, "forkbomb", ControlWatch, "processes started as fast as the system allows", toolPids, "", forkbombJudge, "mac-forkbomb"),
		slowAttempt(rs, "membomb", ControlWatch, "memory touched past the cap (96 MiB)", toolMemory, "", killedBy("memory"), "mac-membomb", "1024"),
		slowAttempt(rs, "wall", ControlWall, "a command that waits past the wall clock", toolWall, "", killedBy("wall"), "mac-hold"),
	}
}

// forkbombJudge: the watch kills the tree past the tasks cap, or
// RLIMIT_NPROC stops the forks first (EAGAIN) and the bomb reports it.
func forkbombJudge(o *observation) verdict {
	if v := killedBy("pids")(o); v.outcome == Contained {
		return v
	}
	rep, v := ran(o)
	switch {
	case v != nil:
		return *v
	case rep.Succeeded:
		return escaped(rep.Evidence)
	case rep.Errno == "EAGAIN":
		return contained("RLIMIT_NPROC refused the forks (EAGAIN): " + rep.Evidence)
	}
	return broken(fmt.Sprintf("neither the watch nor RLIMIT_NPROC stopped it: %s", rep.Evidence))
}

// macPayload is an attempt of the payload tool that Seatbelt must stop.
func macPayload(f Family, name, what string, judge func(*observation) verdict, args ...string) attempt {
	return payloadAttempt(f, name, ControlSeatbelt, what, toolPayload, taskNone, judge, args...)
}

// macCanary is a payload aimed at a host canary that Seatbelt must keep
// it from (EPERM).
func macCanary(f Family, name, what string, open func(fx *fixtures) (*canary, error), args func(addr string) []string) attempt {
	return canaryAttempt(f, name, ControlSeatbelt, what, open, errnoIs("EPERM"), args)
}
