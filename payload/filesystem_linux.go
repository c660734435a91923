package payload

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The filesystem payloads reach for host files, write outside the
// sandbox's writable directories, make device nodes and links, and look
// for descriptors that should not have come in.
func init() {
	Register("read-file", readFile)
	Register("write-file", writeFile)
	Register("open-write", openWrite)
	Register("list-dir", listDir)
	Register("mknod", mknod)
	Register("link", link)
	Register("open-any", openAny)
	Register("open-fds", openFDs)
	Register("findings-links", findingsLinks)
	Register("findings-hooks", findingsHooks)
	Register("environ", environ)
}

// environ: the names of the variables in the payload's environment, for
// the caller to compare with what it meant to pass in (values stay out
// of the report).
func environ([]string) int {
	var names []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	sort.Strings(names)
	return report(Report{Attempt: "environ", Detail: map[string]string{"names": strings.Join(names, ",")},
		Evidence: fmt.Sprintf("%d variables: %s", len(names), strings.Join(names, ", "))})
}

// maxRead bounds what read-file reads and shows.
const maxRead = 64 << 10

// read-file PATH: read a file; the first bytes go in the report so the
// caller can recognise a canary.
func readFile(args []string) int {
	if len(args) != 1 {
		return usage("read-file", "PATH")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return report(outcome("read-file", err, ""))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		return report(outcome("read-file", err, ""))
	}
	r := outcome("read-file", nil, fmt.Sprintf("read %d bytes of %s", len(b), args[0]))
	r.Detail["bytes"] = strconv.Itoa(len(b))
	r.Detail["head"] = string(b[:min(len(b), 256)])
	return report(r)
}

// write-file PATH [DATA]: create or truncate PATH and write DATA.
func writeFile(args []string) int {
	if len(args) < 1 || len(args) > 2 {
		return usage("write-file", "PATH [DATA]")
	}
	data := "airlock payload was here\n"
	if len(args) == 2 {
		data = args[1]
	}
	err := os.WriteFile(args[0], []byte(data), 0o644)
	return report(outcome("write-file", err, fmt.Sprintf("wrote %d bytes to %s", len(data), args[0])))
}

// open-write PATH: open an existing file to rewrite it (O_WRONLY|O_TRUNC,
// as the runc CVE-2019-5736 exploit does with /proc/1/exe), without
// creating it.
func openWrite(args []string) int {
	if len(args) != 1 {
		return usage("open-write", "PATH")
	}
	fd, err := unix.Open(args[0], unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	return report(outcome("open-write", err, "opened "+args[0]+" for writing"))
}

// list-dir PATH: list a directory.
func listDir(args []string) int {
	if len(args) != 1 {
		return usage("list-dir", "PATH")
	}
	names, err := readNames(args[0])
	r := outcome("list-dir", err, fmt.Sprintf("listed %d entries of %s", len(names), args[0]))
	if err == nil {
		r.Detail["entries"] = strings.Join(names[:min(len(names), 20)], ",")
	}
	return report(r)
}

func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// mknod PATH b|c MAJOR MINOR: make a block or character device node.
func mknod(args []string) int {
	if len(args) != 4 || (args[1] != "b" && args[1] != "c") {
		return usage("mknod", "PATH b|c MAJOR MINOR")
	}
	maj, err1 := strconv.ParseUint(args[2], 10, 32)
	mnr, err2 := strconv.ParseUint(args[3], 10, 32)
	if err1 != nil || err2 != nil {
		return usage("mknod", "PATH b|c MAJOR MINOR")
	}
	mode := uint32(unix.S_IFCHR | 0o666)
	if args[1] == "b" {
		mode = unix.S_IFBLK | 0o666
	}
	err := unix.Mknod(args[0], mode, int(unix.Mkdev(uint32(maj), uint32(mnr))))
	return report(outcome("mknod", err, "made device node "+args[0]))
}

// link OLD NEW: make a hard link.
func link(args []string) int {
	if len(args) != 2 {
		return usage("link", "OLD NEW")
	}
	err := unix.Link(args[0], args[1])
	return report(outcome("link", err, "linked "+args[1]+" to "+args[0]))
}

// open-any PATH...: open each path read-only; it succeeds if any opens.
// The errno reported is the first path's when none opened.
func openAny(args []string) int {
	if len(args) == 0 {
		return usage("open-any", "PATH...")
	}
	r := Report{Attempt: "open-any", Detail: map[string]string{}}
	var opened, refused []string
	for _, p := range args {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err == nil {
			unix.Close(fd)
			opened = append(opened, p)
			r.Detail[p] = "opened"
			continue
		}
		if r.Errno == "" {
			r.Errno = errnoName(err)
		}
		r.Detail[p] = errnoName(err)
		refused = append(refused, p+": "+errnoName(err))
	}
	r.Succeeded = len(opened) > 0
	r.Evidence = "refused: " + strings.Join(refused, ", ")
	if r.Succeeded {
		r.Evidence = "opened: " + strings.Join(opened, ", ")
	}
	return report(r)
}

// open-fds: any descriptor beyond stdio that this process did not open
// itself came in from outside (CVE-2024-21626 class).
func openFDs([]string) int {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return report(outcome("open-fds", err, ""))
	}
	names, err := d.Readdirnames(-1)
	own := int(d.Fd())
	if err != nil {
		d.Close()
		return report(outcome("open-fds", err, ""))
	}
	var extra []string
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 || fd == own || runtimeFD(fd) {
			continue
		}
		link, _ := os.Readlink("/proc/self/fd/" + n)
		extra = append(extra, n+" -> "+link)
	}
	d.Close()
	r := Report{Attempt: "open-fds", Succeeded: len(extra) > 0, Detail: map[string]string{"fds": strings.Join(names, ",")}}
	r.Evidence = "only stdio and this process's own descriptors are open"
	if r.Succeeded {
		r.Evidence = "inherited descriptors: " + strings.Join(extra, "; ")
	}
	return report(r)
}

// runtimeFD reports whether fd is one the Go runtime opened in this
// process (its epoll and wakeup descriptors).
func runtimeFD(fd int) bool {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && (link == "anon_inode:[eventpoll]" || link == "anon_inode:[eventfd]")
}

// findings-links HOSTPATH: leave links in /findings that point at host
// files, for the copy-out to follow if it would.
func findingsLinks(args []string) int {
	if len(args) != 1 {
		return usage("findings-links", "HOSTPATH")
	}
	r := Report{Attempt: "findings-links", Detail: map[string]string{}}
	r.Detail["symlink-host"] = errnoName(os.Symlink(args[0], "/findings/host-secret"))
	r.Detail["symlink-shadow"] = errnoName(os.Symlink("/etc/shadow", "/findings/shadow"))
	r.Detail["hardlink-passwd"] = errnoName(unix.Link("/etc/passwd", "/findings/passwd"))
	r.Detail["regular"] = errnoName(os.WriteFile("/findings/report.txt", []byte("finding\n"), 0o644))
	r.Evidence = fmt.Sprintf("left links in /findings: symlink to %s (%s), symlink to /etc/shadow (%s), hard link to /etc/passwd (%s)",
		args[0], okOr(r.Detail["symlink-host"]), okOr(r.Detail["symlink-shadow"]), okOr(r.Detail["hardlink-passwd"]))
	return report(r)
}

// findings-hooks: leave in /findings what would run on the host once
// copied out: a git hook (executable, in a .git), a setuid script, and
// the shape of a bare repository (whose config git reads).
func findingsHooks([]string) int {
	hook := "#!/bin/sh\necho pwned > /tmp/airlock-hook-ran\n"
	var errs []string
	try := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	try(os.MkdirAll("/findings/.git/hooks", 0o755))
	try(os.WriteFile("/findings/.git/hooks/post-checkout", []byte(hook), 0o755))
	try(os.WriteFile("/findings/tool.sh", []byte(hook), 0o755))
	try(os.Chmod("/findings/tool.sh", 0o6755))
	try(os.MkdirAll("/findings/bare/objects", 0o755))
	try(os.MkdirAll("/findings/bare/refs", 0o755))
	try(os.WriteFile("/findings/bare/HEAD", []byte("ref: refs/heads/main\n"), 0o644))
	r := Report{Attempt: "findings-hooks", Detail: map[string]string{}}
	if len(errs) > 0 {
		r.Detail["broken"] = "true"
		r.Evidence = "could not leave the hooks: " + strings.Join(errs, "; ")
		return report(r)
	}
	r.Evidence = "left /findings/.git/hooks/post-checkout (0755), /findings/tool.sh (6755) and a bare repository's HEAD, objects and refs"
	return report(r)
}

func okOr(errno string) string {
	if errno == "" {
		return "made"
	}
	return errno
}
