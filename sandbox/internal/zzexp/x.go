// Package zzexp is a temporary experiment.
package zzexp

import (
	"os"
	"golang.org/x/sys/unix"
	"encoding/json"
	"archive/tar"
)


var _ = unix.Mount
var _ = json.Marshal
var _ = tar.TypeReg
func init() {
	if os.Getenv("ZZEXP") != "" {
		os.Stderr.WriteString("ZZEXP TAKEOVER\n")
		os.Exit(0)
	}
}
