package sandbox

import (
	"strings"

	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
)

// HomeDir is the sandbox's HOME, and cacheDir where its caches go: both
// in its private /tmp, inside the disk cap and outside /workspace, so
// that no cache, configuration or byte code lands in a session's patch.
// The init makes HomeDir, the sandbox user's own (0700); a cache
// directory is made by the program that uses it.
const (
	HomeDir  = initproc.HomeDir
	cacheDir = TmpDir + "/cache"
)

// BaseEnv is a target's whole environment before the proxy variables: a
// PATH of the policy's search path, HOME (HomeDir) and the XDG base
// directories under it, the caches of pip, npm, Go and Python's byte code
// under cacheDir, TMPDIR and a UTF-8 locale. The caller's own environment
// never reaches the sandbox, so host secrets in it stay outside.
func BaseEnv(searchPath []string) []string {
	return []string{
		"PATH=" + strings.Join(searchPath, ":"),
		"HOME=" + HomeDir,
		"TMPDIR=" + TmpDir,
		"LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + HomeDir + "/.config",
		"XDG_DATA_HOME=" + HomeDir + "/.local/share",
		"XDG_STATE_HOME=" + HomeDir + "/.local/state",
		"XDG_CACHE_HOME=" + cacheDir,
		"PIP_CACHE_DIR=" + cacheDir + "/pip",
		"npm_config_cache=" + cacheDir + "/npm",
		"GOPATH=" + HomeDir + "/go",
		"GOMODCACHE=" + cacheDir + "/go-mod",
		"GOCACHE=" + cacheDir + "/go-build",
		"PYTHONPYCACHEPREFIX=" + cacheDir + "/pycache",
	}
}

// IsProxyVar reports whether name is one of the proxy variables, in any
// case (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY, FTP_PROXY): with a
// proxy, the sandbox replaces whatever the caller passed for them with
// its own, NO_PROXY empty (docs/sandbox.md, "The environment").
func IsProxyVar(name string) bool { return initproc.IsProxyVar(name) }
