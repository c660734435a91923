// Package findings copies a sandbox's /findings out to the host, on
// Linux and on macOS alike (docs/sandbox.md, "Findings"), and marks
// findings as untrusted after a suspected escape.
//
// Who controls what: the contained code chose every name, type, mode and
// byte under /findings; the agent calling airlock chose the findings
// directory's path; another local user may own a directory on the way to
// it, or race to change what the path names. So the host side is resolved
// and written by descriptor only: the findings directory is made (or an
// empty one of the caller's taken) when the sandbox starts, every path on
// the way to it is walked without following a symbolic link, every entry
// below it is created new (O_EXCL, never through a link or an existing
// file), and files come out as data (their read and write bits only: no
// exec, setuid, setgid or sticky bit). The sandbox side is read by
// descriptor too, after every process inside is dead, one name at a time
// with no link followed; at most MaxEntries entries, nesting and bytes
// bounded, names that are not printable left out, and names that make git
// or hg read a directory as a repository renamed.
package findings
