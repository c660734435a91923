package sandbox

import (
	"strings"
)

// BaseEnv is a target's whole environment before the proxy variables: a
// PATH of the policy's search path, HOME in the workspace, TMPDIR and a
// UTF-8 locale. The caller's own environment never reaches the sandbox,
// so host secrets in it stay outside.
func BaseEnv(searchPath []string) []string {
	return []string{
		"PATH=" + strings.Join(searchPath, ":"),
		"HOME=" + WorkspaceDir,
		"TMPDIR=" + TmpDir,
		"LANG=C.UTF-8",
	}
}
