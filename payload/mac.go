//go:build unix

package payload

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/net/http/httpproxy"
	"golang.org/x/sys/unix"
)

// The payloads of the macOS battery (selftest's mac.go): written for any
// Unix, so that what they attempt and report is tested on Linux, and
// registered on macOS (mac_darwin.go). Each names its attempt "mac-…".
// IsMac reports whether name is one of the Mac's payloads, which airlock
// registers on macOS: for the scripts that name them, tested on Linux.
func IsMac(name string) bool {
	_, ok := macPayloads[name]
	return ok
}

var macPayloads = map[string]Func{
	"mac-hello":       macHello,
	"mac-read":        macRead,
	"mac-write":       macWrite,
	"mac-connect":     macConnect,
	"mac-get":         macGet,
	"mac-get-noproxy": macGetNoProxy,
	"mac-hardlink":    macHardlink,
	"mac-exec":        macExec,
	"mac-forkbomb":    macForkbomb,
	"mac-membomb":     macMembomb,
	"mac-hold":        macHold,
}

// macReasonHeader is the proxy's header on every refusal.
const macReasonHeader = "X-Airlock-Reason"

// macOutcome is the report of an attempt that err ended, or that got
// through (ok says what it got).
func macOutcome(name string, err error, ok string) Report {
	r := Report{Attempt: name, Succeeded: err == nil, Evidence: ok, Detail: map[string]string{}}
	if err != nil {
		r.Evidence, r.Errno = err.Error(), macErrno(err)
	}
	return r
}

// macErrno names the errno behind err ("EPERM"), "" if none.
func macErrno(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	return ""
}

// mac-hello: who the payload runs as, and whether /Users, every user's
// home, is closed to it (EPERM under airlock's profile).
func macHello([]string) int {
	r := Report{Attempt: "mac-hello", Detail: map[string]string{
		"uid": strconv.Itoa(os.Getuid()), "euid": strconv.Itoa(os.Geteuid()), "pid": strconv.Itoa(os.Getpid()),
		"users": "opened",
	}}
	if f, err := os.Open("/Users"); err != nil {
		r.Detail["users"] = macErrno(err)
		if r.Detail["users"] == "" {
			r.Detail["users"] = err.Error()
		}
	} else {
		f.Close()
	}
	r.Evidence = fmt.Sprintf("running as uid %d, pid %d; /Users: %s", os.Getuid(), os.Getpid(), r.Detail["users"])
	return report(r)
}

// mac-read PATH: open PATH and read it.
func macRead(args []string) int {
	if len(args) != 1 {
		return usage("mac-read", "PATH")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return report(macOutcome("mac-read", err, ""))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<16))
	r := macOutcome("mac-read", err, fmt.Sprintf("read %d bytes of %s", len(b), args[0]))
	r.Detail["head"] = string(b[:min(len(b), 256)])
	return report(r)
}

// mac-write DIR: create a file in DIR.
func macWrite(args []string) int {
	if len(args) != 1 {
		return usage("mac-write", "DIR")
	}
	p := filepath.Join(args[0], "airlock-payload-"+strconv.Itoa(os.Getpid()))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
	}
	return report(macOutcome("mac-write", err, "created "+p))
}

// mac-connect HOST:PORT: a direct TCP connection, around the proxy.
func macConnect(args []string) int {
	if len(args) != 1 {
		return usage("mac-connect", "HOST:PORT")
	}
	c, err := net.DialTimeout("tcp", args[0], 3*time.Second)
	if err == nil {
		c.Close()
	}
	return report(macOutcome("mac-connect", err, "connected to "+args[0]))
}

// mac-get URL: GET URL as a client honouring the proxy variables does.
// It succeeded if the answer came from upstream, not from the proxy.
func macGet(args []string) int {
	if len(args) != 1 {
		return usage("mac-get", "URL")
	}
	return report(macHTTP("mac-get", args[0], httpproxy.FromEnvironment()))
}

// mac-get-noproxy URL: GET URL with NO_PROXY=*, as a client told to
// bypass the proxy: it connects directly.
func macGetNoProxy(args []string) int {
	if len(args) != 1 {
		return usage("mac-get-noproxy", "URL")
	}
	cfg := httpproxy.FromEnvironment()
	cfg.NoProxy = "*"
	return report(macHTTP("mac-get-noproxy", args[0], cfg))
}

// macHTTP gets url through the proxy cfg names for it (read afresh:
// net/http's ProxyFromEnvironment reads the variables once a process).
func macHTTP(name, raw string, cfg *httpproxy.Config) Report {
	proxyFor := cfg.ProxyFunc()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: func(r *http.Request) (*url.URL, error) { return proxyFor(r.URL) }}}
	resp, err := c.Get(raw)
	if err != nil {
		return macOutcome(name, err, "")
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	reason := resp.Header.Get(macReasonHeader)
	r := Report{Attempt: name, Succeeded: reason == "" && resp.StatusCode < 400, Evidence: "HTTP " + resp.Status,
		Detail: map[string]string{"status": strconv.Itoa(resp.StatusCode), "reason": reason, "body": string(body[:min(len(body), 256)])}}
	if reason != "" {
		r.Evidence += "; " + macReasonHeader + ": " + reason
	}
	return r
}

// mac-hardlink SRC DST: hard-link SRC, a file of the host's, to DST in
// the workspace, then read it there: Seatbelt decides by path.
func macHardlink(args []string) int {
	if len(args) != 2 {
		return usage("mac-hardlink", "SRC DST")
	}
	if err := os.Link(args[0], args[1]); err != nil {
		return report(macOutcome("mac-hardlink", err, ""))
	}
	b, err := os.ReadFile(args[1])
	r := macOutcome("mac-hardlink", err, fmt.Sprintf("linked %s and read %d bytes of it", args[0], len(b)))
	r.Detail["head"] = string(b[:min(len(b), 256)])
	return report(r)
}

// mac-exec PATH ARG...: execute a program and wait for it; it succeeded
// if the program ran and exited 0.
func macExec(args []string) int {
	if len(args) < 1 {
		return usage("mac-exec", "PATH ARG...")
	}
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	r := macOutcome("mac-exec", err, "ran "+args[0])
	r.Detail["output"] = string(out[:min(len(out), 256)])
	return report(r)
}

// mac-forkbomb [N]: start copies of this binary that wait, up to N
// (default 2000), as fast as the system allows.
func macForkbomb(args []string) int {
	self, err := os.Executable()
	if err != nil {
		return report(macOutcome("mac-forkbomb", err, ""))
	}
	runtime.GOMAXPROCS(1)
	return forkUntil("mac-forkbomb", macCount(args, 2000), macErrno, func() error { return exec.Command(self, "payload", "mac-hold").Start() })
}

// mac-membomb [MiB]: touch up to MiB (default 4096) of memory.
func macMembomb(args []string) int {
	limit := macCount(args, 4096)
	keep := touchMemory(int64(limit))
	// Held a while: the watch reads every 100 ms.
	time.Sleep(2 * time.Second)
	runtime.KeepAlive(keep)
	return report(Report{Attempt: "mac-membomb", Succeeded: true, Evidence: fmt.Sprintf("touched %d MiB without being stopped", limit)})
}

// macCount parses the optional count at args[0], any integer; def when
// there is none or it is not one.
func macCount(args []string, def int) int {
	if len(args) > 0 {
		if n, err := strconv.Atoi(args[0]); err == nil {
			return n
		}
	}
	return def
}

// mac-hold: wait for an hour.
func macHold([]string) int {
	time.Sleep(time.Hour)
	return 0
}
