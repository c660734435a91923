package initproc

import (
	"strconv"
	"strings"
)

// proxyVars are the variables that point clients at a proxy; the sandbox
// replaces whatever the caller passed for them.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY"}

// ProxyEnv is withProxyEnv for a sandbox with no init of its own, whose
// commands airlock starts itself (macOS's).
func ProxyEnv(env []string, port int) []string { return withProxyEnv(env, port) }

// withProxyEnv returns env without any proxy variable (in any case), plus
// the variables that send HTTP, HTTPS and SOCKS clients to the proxy
// listener on 127.0.0.1:port. Loopback stays direct: inside the empty
// network namespace it reaches nothing of the host.
func withProxyEnv(env []string, port int) []string {
	out := make([]string, 0, len(env)+9)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !isProxyVar(k) {
			out = append(out, kv)
		}
	}
	if port <= 0 {
		return out
	}
	hp := "http://127.0.0.1:" + strconv.Itoa(port)
	sp := "socks5h://127.0.0.1:" + strconv.Itoa(port)
	noProxy := "localhost,127.0.0.1,::1"
	return append(out,
		"HTTP_PROXY="+hp, "http_proxy="+hp,
		"HTTPS_PROXY="+hp, "https_proxy="+hp,
		"ALL_PROXY="+sp, "all_proxy="+sp,
		"NO_PROXY="+noProxy, "no_proxy="+noProxy,
	)
}

func isProxyVar(k string) bool {
	for _, p := range proxyVars {
		if strings.EqualFold(k, p) {
			return true
		}
	}
	return false
}
