package export

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/airlock-sandbox/airlock/seccomp"
)

// DefaultProxy is where airlock proxy listens inside the container's
// network namespace when PodmanOptions.Proxy is empty.
const DefaultProxy = "127.0.0.1:3128"

// nprocUlimit is the RLIMIT_NPROC the run line sets. podman's default
// (1048576) is above many hosts' hard limit, which root cannot raise
// without CAP_SYS_RESOURCE, so the run fails unless it is set. It is not
// the task cap: RLIMIT_NPROC counts every process of uid 65534 in the
// host's user namespace, other containers' too; the cap is --pids-limit.
const nprocUlimit = 4096

// PodmanOptions are the podman export's settings beyond the task.
type PodmanOptions struct {
	// Proxy is the loopback address airlock proxy listens on inside the
	// container's network namespace (default DefaultProxy).
	Proxy string
	// SeccompFile is the path the run line names for the seccomp profile.
	// Empty: the script writes the profile to a temporary file, and the
	// run line names $AIRLOCK_SECCOMP.
	SeccompFile string
}

// PodmanExport is what Podman returns.
type PodmanExport struct {
	// Args is the podman command line, from "podman" on. It names the
	// network namespace as $AIRLOCK_NETNS (made by the script) and, without
	// PodmanOptions.SeccompFile, the profile as $AIRLOCK_SECCOMP.
	Args []string
	// Line is Args as one line of POSIX shell.
	Line string
	// Script is a POSIX shell script that makes the network namespace,
	// starts airlock proxy inside it, runs Args and tears everything down.
	Script string
	// Profile is the seccomp profile (seccomp.ContainerProfile).
	Profile []byte
}

// Podman compiles t into a podman run line and the script around it
// (docs/export.md, "podman").
func Podman(t *Task, o PodmanOptions) (*PodmanExport, error) {
	proxy := o.Proxy
	if proxy == "" {
		proxy = DefaultProxy
	}
	ap, err := netip.ParseAddrPort(proxy)
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return nil, fmt.Errorf("export: proxy address %q: want a loopback IP and port, as 127.0.0.1:3128 (the namespace has only lo)", proxy)
	}
	seccompPath := "$AIRLOCK_SECCOMP"
	if o.SeccompFile != "" {
		seccompPath = o.SeccompFile
	}
	c := t.Caps
	disk := c.DiskWriteMB << 20
	// --mount rather than --tmpfs: podman 4.3 takes U (owned by the
	// container's user) only there, and --tmpfs's mode did not hold for
	// every path.
	tmpfs := func(dir, mode, extra string) string {
		return fmt.Sprintf("type=tmpfs,destination=%s,tmpfs-size=%d,tmpfs-mode=%s,U=true,nosuid,nodev%s", dir, disk, mode, extra)
	}
	args := []string{"podman", "run", "--rm", "--name", "$AIRLOCK_NETNS",
		// The network: the namespace the script made, whose only
		// interface is lo and whose one listener is airlock proxy (none
		// when the task allows no egress).
		"--network", "ns:/run/netns/$AIRLOCK_NETNS", "--dns", "none"}
	if t.TaskName != "" {
		for _, e := range proxyEnv(proxy) {
			args = append(args, "--env", e)
		}
	}
	args = append(args,
		// Privileges.
		"--user", "65534:65534", "--cap-drop=all", "--security-opt", "no-new-privileges",
		"--security-opt", "seccomp="+seccompPath,
		// Files: a read-only root; /tmp, /workspace, /findings and
		// /dev/shm each a tmpfs of diskWriteMb.
		"--read-only", "--read-only-tmpfs=false",
		"--mount", tmpfs("/tmp", "1777", ",notmpcopyup"),
		"--mount", tmpfs(workDir, "0755", ",tmpcopyup"), // the image's /workspace, copied in
		"--workdir", workDir, // where the command gate took relative arguments from
		"--mount", tmpfs("/findings", "0755", ",noexec,notmpcopyup"),
		"--shm-size", strconv.FormatInt(disk, 10)+"b",
		// Caps.
		"--memory", strconv.FormatInt(c.MemoryMB, 10)+"m", "--memory-swap", strconv.FormatInt(c.MemoryMB, 10)+"m",
		"--pids-limit", strconv.FormatInt(c.ProcessCount, 10),
		"--cpus", strconv.FormatFloat(t.CPUs(), 'f', -1, 64),
		"--ulimit", fmt.Sprintf("cpu=%d:%d", t.CPUSeconds(), t.CPUSeconds()+1),
		"--ulimit", fmt.Sprintf("fsize=%d:%d", disk, disk),
		"--ulimit", fmt.Sprintf("nofile=%d:%d", c.OpenFiles, c.OpenFiles),
		"--ulimit", fmt.Sprintf("nproc=%d:%d", max(nprocUlimit, c.ProcessCount), max(nprocUlimit, c.ProcessCount)),
		"--ulimit", "core=0:0",
		"--timeout", strconv.FormatInt(t.WallSeconds(), 10),
		t.Image.String(),
	)
	own := len(args) // podman's own arguments, before the command's
	args = append(args, t.Command...)
	line, err := shellLine(args, own)
	if err != nil {
		return nil, err
	}
	script, err := podmanScript(t, line, proxy, o.SeccompFile)
	if err != nil {
		return nil, err
	}
	return &PodmanExport{Args: args, Line: line, Script: script, Profile: seccomp.ContainerProfile()}, nil
}

// proxyEnv are the variables that point HTTP clients (curl, pip, npm, Go,
// Python's requests) at the proxy: HTTP CONNECT for http and https, SOCKS5
// with remote name resolution for the rest, upper and lower case, and no
// exceptions.
func proxyEnv(proxy string) []string {
	http, socks := "http://"+proxy, "socks5h://"+proxy
	var env []string
	for _, v := range [][2]string{{"HTTP_PROXY", http}, {"HTTPS_PROXY", http}, {"ALL_PROXY", socks}, {"NO_PROXY", ""}} {
		env = append(env, v[0]+"="+v[1], strings.ToLower(v[0])+"="+v[1])
	}
	return env
}

// shellLine renders args as one line of POSIX shell: each argument quoted
// where the shell would read it otherwise. Of the first own arguments,
// podman's own, those that are exactly one of scriptWords are put in
// double quotes so that the script's variable expands; every other
// argument, the command's whatever it holds, is quoted as it is, so that
// nothing in it expands. An argument that POSIX sh cannot hold (a
// control character, a NUL) is an error: the export refuses it rather
// than print a line that runs something else.
func shellLine(args []string, own int) (string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		if i < own && scriptWords[a] {
			out[i] = `"` + a + `"`
			continue
		}
		q, err := syntax.Quote(a, syntax.LangPOSIX)
		if err != nil {
			return "", fmt.Errorf("export: argument %s: %w", strconv.Quote(a), err)
		}
		out[i] = q
	}
	return strings.Join(out, " "), nil
}

// scriptWords are the run line's arguments that name the script's
// variables, as Podman writes them (nothing else in them expands).
var scriptWords = map[string]bool{
	"$AIRLOCK_NETNS":               true,
	"ns:/run/netns/$AIRLOCK_NETNS": true,
	"seccomp=$AIRLOCK_SECCOMP":     true,
}
