package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// extractor applies layer tars to a root directory. Every path is looked
// up from the root's fd with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS),
// and every change is made with an *at call on the parent's fd and the
// entry's last name, so no entry can reach outside the root or write
// through a symlink, whatever the earlier entries made (CVE-2021-30465
// class: a symlink planted by one entry and used by the next).
//
// This is hand-written rather than taken from containerd's or moby's
// archive package: those follow symlinks that stay inside the root and
// pull in large dependency trees; airlock refuses any write through a
// symlink, which needs lookups that resolve none.
type extractor struct {
	root    int // O_RDONLY|O_DIRECTORY fd of the root
	opts    Options
	st      *Stats
	layerN  int
	created map[string]struct{} // entries made by the current layer (whiteouts spare them)
	dirs    map[string]dirMeta  // final metadata of directories, applied at the end
	written *budget
	buf     []byte
}

// dirMeta is a directory's final mode, owner and mtime: applied last, so a
// read-only directory in the image does not stop its own extraction.
type dirMeta struct {
	mode     uint32
	uid, gid int
	chown    bool
	mtime    time.Time
}

func newExtractor(rootfs string, opts Options, st *Stats) (*extractor, error) {
	if err := os.Mkdir(rootfs, 0o700); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	fd, err := unix.Open(rootfs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("image: open %s: %w", rootfs, err)
	}
	// Probe openat2 once, so an old kernel fails closed with a clear error.
	probe, err := openBeneath(fd, ".", unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		unix.Close(fd)
		if err == unix.ENOSYS {
			return nil, fmt.Errorf("image: unpacking needs openat2 (Linux 5.6 or later): %w", err)
		}
		return nil, fmt.Errorf("image: openat2: %w", err)
	}
	unix.Close(probe)
	uid, gid, chown, _ := opts.owner(0, 0)
	x := &extractor{
		root: fd, opts: opts, st: st,
		dirs:    map[string]dirMeta{".": {mode: 0o755, uid: uid, gid: gid, chown: chown, mtime: time.Unix(0, 0)}},
		written: &budget{left: opts.maxBytes(), cap: opts.maxBytes(), what: "files written"},
		buf:     make([]byte, 128<<10),
	}
	return x, nil
}

func (x *extractor) close() {
	if x.root >= 0 {
		unix.Close(x.root)
		x.root = -1
	}
}

// refusal is a fixed reason for refusing an entry; entry() turns it into
// an *EntryError naming the layer and the entry.
type refusal string

func (r refusal) Error() string { return string(r) }

func (x *extractor) entry(name string, err error) error {
	var r refusal
	if errors.As(err, &r) {
		return &EntryError{Layer: x.layerN, Name: name, Reason: string(r)}
	}
	return fmt.Errorf("image: layer %d: entry %q: %w", x.layerN, name, err)
}

// lookupErr words a failed lookup below the root as a refusal where the
// layer is at fault.
func lookupErr(err error) error {
	switch err {
	case unix.ELOOP:
		return refusal(ReasonParentSymlink)
	case unix.ENOTDIR:
		return refusal(ReasonParentNotDir)
	case unix.EXDEV:
		return refusal(ReasonOutsideResolved)
	}
	return err
}

// layer applies one layer's tar stream.
func (x *extractor) layer(ctx context.Context, n int, tr *tar.Reader) error {
	x.layerN = n
	x.created = map[string]struct{}{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("image: layer %d: %w", n, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		x.st.Entries++
		if x.st.Entries > x.opts.maxEntries() {
			return fmt.Errorf("image: more than %d tar entries: %w", x.opts.maxEntries(), ErrTooLarge)
		}
		if err := x.apply(hdr, tr); err != nil {
			return x.entry(hdr.Name, err)
		}
	}
}

// apply makes one entry.
func (x *extractor) apply(hdr *tar.Header, r io.Reader) error {
	rel, reason := cleanEntryName(hdr.Name)
	if reason != "" {
		return refusal(reason)
	}
	dir, base := splitRel(rel)
	if rel != "." {
		switch kind, target := parseWhiteout(base); kind {
		case whiteoutOtherMeta:
			return nil
		case whiteoutDirOpaque:
			x.st.Whiteouts++
			return x.opaque(dir)
		case whiteoutFile:
			if target == "" {
				return refusal(ReasonBadWhiteout)
			}
			x.st.Whiteouts++
			return x.whiteout(joinRel(dir, target))
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.mkdir(rel, hdr)
	case tar.TypeReg:
		return x.file(rel, hdr, r)
	case tar.TypeSymlink:
		return x.symlink(rel, hdr)
	case tar.TypeLink:
		return x.hardlink(rel, hdr)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		// The sandbox mounts its own minimal /dev; nodes from an image
		// are never created (and mknod needs privilege anyway).
		x.st.SkippedSpecial++
		return nil
	}
	// Pax global headers, GNU volume labels and unknown types make nothing.
	return nil
}

// openDir opens the directory rel below the root. With create, missing
// components are made (mode 0700 until the end, then 0755 unless the
// layer says otherwise), as tar extraction has always done.
func (x *extractor) openDir(rel string, create bool) (int, error) {
	fd, err := openBeneath(x.root, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err == nil || !create || err != unix.ENOENT {
		return fd, lookupErr(err)
	}
	cur, err := openBeneath(x.root, ".", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return -1, err
	}
	sofar := "."
	for comp := range strings.SplitSeq(rel, "/") {
		sofar = joinRel(sofar, comp)
		next, err := openBeneath(cur, comp, unix.O_RDONLY|unix.O_DIRECTORY)
		if err == unix.ENOENT {
			if err = unix.Mkdirat(cur, comp, 0o700); err == nil || err == unix.EEXIST {
				if _, ok := x.dirs[sofar]; !ok {
					uid, gid, chown, _ := x.opts.owner(0, 0)
					x.dirs[sofar] = dirMeta{mode: 0o755, uid: uid, gid: gid, chown: chown, mtime: time.Unix(0, 0)}
				}
				x.created[sofar] = struct{}{}
				next, err = openBeneath(cur, comp, unix.O_RDONLY|unix.O_DIRECTORY)
			}
		}
		unix.Close(cur)
		if err != nil {
			return -1, lookupErr(err)
		}
		cur = next
	}
	return cur, nil
}

// parent opens the parent of rel for writing an entry into it.
func (x *extractor) parent(rel string) (int, string, error) {
	if rel == "." {
		return -1, "", refusal(ReasonRootNotDir)
	}
	dir, base := splitRel(rel)
	fd, err := x.openDir(dir, true)
	return fd, base, err
}

// perm returns the mode bits to apply, without setuid/setgid: airlock's
// sandbox runs under no_new_privs, where they do nothing, and on the host
// the cache must never hold a setuid file (as root with image ownership it
// would be a setuid-root binary any user who reaches the cache could run).
func (x *extractor) perm(hdr *tar.Header) uint32 {
	m := uint32(hdr.Mode) & 0o7777
	if m&(unix.S_ISUID|unix.S_ISGID) != 0 {
		x.st.StrippedSetID++
		m &^= unix.S_ISUID | unix.S_ISGID
	}
	return m
}

// owner resolves the entry's owner under the ownership option.
func (x *extractor) owner(hdr *tar.Header) (int, int, bool, error) {
	uid, gid, chown, reason := x.opts.owner(hdr.Uid, hdr.Gid)
	if reason != "" {
		return 0, 0, false, refusal(reason)
	}
	return uid, gid, chown, nil
}

func (x *extractor) mkdir(rel string, hdr *tar.Header) error {
	uid, gid, chown, err := x.owner(hdr)
	if err != nil {
		return err
	}
	mode := x.perm(hdr)
	if x.opts.Ownership == OwnershipUser {
		mode |= 0o700
	}
	x.st.Dirs++
	x.dirs[rel] = dirMeta{mode: mode, uid: uid, gid: gid, chown: chown, mtime: hdr.ModTime}
	x.created[rel] = struct{}{}
	if rel == "." {
		return nil
	}
	pfd, base, err := x.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	err = unix.Mkdirat(pfd, base, 0o700)
	if err == unix.EEXIST {
		var st unix.Stat_t
		if err = unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return nil // a directory stays, with its contents; its metadata is replaced
		}
		if _, err = removeAt(pfd, base); err == nil {
			err = unix.Mkdirat(pfd, base, 0o700)
		}
	}
	return err
}

// replace removes whatever is at base so a new entry can take its place
// (a later entry wins, as in any tar), forgetting directory metadata below.
func (x *extractor) replace(pfd int, rel, base string) error {
	wasDir, err := removeAt(pfd, base)
	if wasDir {
		x.forget(rel)
	}
	return err
}

func (x *extractor) file(rel string, hdr *tar.Header, r io.Reader) error {
	uid, gid, chown, err := x.owner(hdr)
	if err != nil {
		return err
	}
	if err := x.written.take(hdr.Size); err != nil {
		return err
	}
	pfd, base, err := x.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := x.replace(pfd, rel, base); err != nil {
		return err
	}
	// O_EXCL|O_NOFOLLOW: always a new inode, never an existing file or a
	// symlink's target.
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), base)
	defer f.Close()
	n, err := io.CopyBuffer(onlyWriter{f}, io.LimitReader(r, hdr.Size), x.buf)
	if err != nil {
		return err
	}
	if n != hdr.Size {
		return io.ErrUnexpectedEOF
	}
	if chown {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return err
		}
	}
	if err := unix.Fchmod(fd, x.perm(hdr)); err != nil {
		return err
	}
	if err := unix.Futimes(fd, timevals(hdr.ModTime)); err != nil {
		return err
	}
	x.st.Files++
	x.st.BytesWritten += n
	x.created[rel] = struct{}{}
	return f.Close()
}

// onlyWriter hides os.File's ReadFrom, whose copy_file_range/splice paths
// cannot apply to a tar stream, so io.CopyBuffer uses the buffer.
type onlyWriter struct{ io.Writer }

// symlink makes a symlink. Its target may name anything, absolute or
// relative: it is only ever resolved later, inside the sandbox's root,
// since extraction resolves no symlink at all.
func (x *extractor) symlink(rel string, hdr *tar.Header) error {
	if hdr.Linkname == "" {
		return refusal(ReasonEmptySymlink)
	}
	uid, gid, chown, err := x.owner(hdr)
	if err != nil {
		return err
	}
	pfd, base, err := x.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := x.replace(pfd, rel, base); err != nil {
		return err
	}
	if err := unix.Symlinkat(hdr.Linkname, pfd, base); err != nil {
		return err
	}
	if chown {
		if err := unix.Fchownat(pfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	ts := unix.Timespec{Sec: hdr.ModTime.Unix(), Nsec: int64(hdr.ModTime.Nanosecond())}
	if err := unix.UtimesNanoAt(pfd, base, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	x.st.Symlinks++
	x.created[rel] = struct{}{}
	return nil
}

// hardlink links rel to a file already extracted below the root. The
// target is looked up like any entry (no "..", no absolute path, no
// symlink on the way), so it cannot name a host file.
func (x *extractor) hardlink(rel string, hdr *tar.Header) error {
	trel, reason := cleanEntryName(hdr.Linkname)
	if reason != "" {
		return refusal(ReasonLinkEscapes)
	}
	if trel == "." {
		return refusal(ReasonLinkToDir)
	}
	tdir, tbase := splitRel(trel)
	tfd, err := x.openDir(tdir, false)
	if err == unix.ENOENT {
		return refusal(ReasonLinkMissing)
	}
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	var st unix.Stat_t
	if err := unix.Fstatat(tfd, tbase, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return refusal(ReasonLinkMissing)
		}
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return refusal(ReasonLinkToDir)
	}
	if trel == rel {
		return nil
	}
	pfd, base, err := x.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := x.replace(pfd, rel, base); err != nil {
		return err
	}
	// Flags 0: a symlink target is linked as the symlink itself, never followed.
	if err := unix.Linkat(tfd, tbase, pfd, base, 0); err != nil {
		return err
	}
	x.st.Hardlinks++
	x.created[rel] = struct{}{}
	return nil
}

// whiteout deletes rel, made by a lower layer (OCI: a whiteout hides only
// what lower layers made, so an entry this layer made is spared).
func (x *extractor) whiteout(rel string) error {
	if _, ok := x.created[rel]; ok {
		return nil
	}
	dir, base := splitRel(rel)
	pfd, err := x.openDir(dir, false)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	return x.replace(pfd, rel, base)
}

// opaque empties dir of everything lower layers made in it.
func (x *extractor) opaque(dir string) error {
	fd, err := x.openDir(dir, false)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return err
	}
	return removeChildren(fd, func(name string) bool {
		rel := joinRel(dir, name)
		if _, ok := x.created[rel]; ok {
			return true
		}
		x.forget(rel)
		return false
	})
}

// forget drops recorded directory metadata at or below rel.
func (x *extractor) forget(rel string) {
	for k := range x.dirs {
		if within(k, rel) && k != "." {
			delete(x.dirs, k)
		}
	}
}

// finish applies directory metadata, deepest first.
func (x *extractor) finish() error {
	keys := make([]string, 0, len(x.dirs))
	for k := range x.dirs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		di, dj := strings.Count(keys[i], "/"), strings.Count(keys[j], "/")
		if keys[i] == "." || keys[j] == "." {
			return keys[j] == "." && keys[i] != "."
		}
		if di != dj {
			return di > dj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		m := x.dirs[k]
		fd, err := openBeneath(x.root, k, unix.O_RDONLY|unix.O_DIRECTORY)
		if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
			continue // replaced by a later entry
		}
		if err != nil {
			return fmt.Errorf("image: finish %q: %w", k, err)
		}
		err = x.applyDir(fd, m)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("image: finish %q: %w", k, err)
		}
	}
	return nil
}

func (x *extractor) applyDir(fd int, m dirMeta) error {
	if x.opts.Ownership == OwnershipUser {
		m.mode |= 0o700
	}
	if m.chown {
		if err := unix.Fchown(fd, m.uid, m.gid); err != nil {
			return err
		}
	}
	if err := unix.Fchmod(fd, m.mode); err != nil {
		return err
	}
	return unix.Futimes(fd, timevals(m.mtime))
}

// timevals returns t as the atime and mtime for futimes, in seconds and
// microseconds (UnixNano would overflow for dates a tar can hold).
func timevals(t time.Time) []unix.Timeval {
	tv := unix.Timeval{Sec: t.Unix(), Usec: int64(t.Nanosecond() / 1000)}
	return []unix.Timeval{tv, tv}
}
