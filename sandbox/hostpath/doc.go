// Package hostpath decides which host paths a sandbox may show: one
// validation that the policy's `policy check`, sandbox.Start and, at bind
// time, the sandbox's init all apply (docs/sandbox.md, "The ban on host
// paths").
//
// A path is refused on its words (not clean and absolute, in or under a
// refused tree such as /run or /proc, one of the refused directories such
// as /home or the host's root) and then for what it names on this host:
// its real path, every symbolic link followed (/var/lock is /run/lock on
// Debian), and its place in the host's filesystems, so that a bind mount
// of a refused tree elsewhere (/srv/x showing /run) is refused too, as is
// a tree with a kernel filesystem (proc, sysfs, ...) mounted below it.
// The init checks the descriptor of the very tree it clones, so a path
// swapped between the checks and the bind gains nothing.
//
// The package imports only the lower standard library and x/sys/unix:
// the sandbox's init imports it (see the initproc package's doc).
package hostpath
