package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the line `airlock --version` prints: the module's version
// and the commit it was built from, as the Go toolchain stamped them
// into the binary (go install ...@version stamps the version; a build in
// a checkout stamps the commit unless -buildvcs=false, as CI builds: then
// the commit is "unknown").
func version() string {
	v, commit, when, dirty := "(devel)", "unknown", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if when != "" {
		commit += " " + when
	}
	if dirty {
		commit += ", modified"
	}
	return fmt.Sprintf("airlock %s (commit %s) %s %s/%s", v, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
