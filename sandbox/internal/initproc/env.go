package initproc

import (
	"strconv"
	"strings"
)

// proxyVars are the variables that point clients at a proxy; the sandbox
// replaces whatever the caller passed for them (IsProxyVar).
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY"}

// ProxyEnv is proxyEnv for a sandbox with no init of its own, whose
// commands airlock starts itself (macOS's), with auth, "user:token", in
// the variables' URLs when it is not "" (http://user:token@127.0.0.1:PORT):
// curl, Python, Go and Node send it as Proxy-Authorization (Basic), or
// as SOCKS5's username and password, to a proxy whose listener others
// can reach. The token is base64url, which a URL's user information
// holds as it is.
func ProxyEnv(env []string, port int, auth string) []string {
	if auth != "" {
		auth += "@"
	}
	return proxyEnv(env, port, auth)
}

// proxyEnv returns env without any proxy variable (in any case), plus
// the variables that send HTTP, HTTPS and SOCKS clients to the proxy
// listener on 127.0.0.1:port (auth, "user:token@" or "", in their URLs), and an empty NO_PROXY: every destination,
// loopback included, goes through the proxy, which decides it by the
// task's allowlist. Going round it reaches nothing outside the sandbox
// (loopback in its own network namespace is its own; Landlock, where it
// has TCP rules, refuses a TCP connect to any port but the proxy's), and
// clients match NO_PROXY by address without the port (pip's requests,
// curl): a loopback address in it would send round the proxy, to an
// EACCES, the "127.0.0.1:PORT" an allowlist lets through.
func proxyEnv(env []string, port int, auth string) []string {
	out := make([]string, 0, len(env)+9)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !IsProxyVar(k) {
			out = append(out, kv)
		}
	}
	if port <= 0 {
		return out
	}
	hp := "http://" + auth + "127.0.0.1:" + strconv.Itoa(port)
	sp := "socks5h://" + auth + "127.0.0.1:" + strconv.Itoa(port)
	return append(out,
		"HTTP_PROXY="+hp, "http_proxy="+hp,
		"HTTPS_PROXY="+hp, "https_proxy="+hp,
		"ALL_PROXY="+sp, "all_proxy="+sp,
		"NO_PROXY=", "no_proxy=",
	)
}

// IsProxyVar reports whether k names a proxy variable, in any case:
// HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY or FTP_PROXY.
func IsProxyVar(k string) bool {
	for _, p := range proxyVars {
		if strings.EqualFold(k, p) {
			return true
		}
	}
	return false
}
