package changes

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Diff compares the tree old (as it was) with new (as it is now) and
// returns the patch that turns old into new, within opt's limits and
// leaving out what its rules and the original's ignore files exclude.
//
// It works in two passes. The first lists both trees (the original
// first, then its ignore files are read, then the current tree, neither
// listing what is excluded beneath a directory the rules exclude),
// compares every file and link (by size, then by SHA-256 of the content)
// and pairs each deleted file with an added one of the same content as a
// rename: that is the manifest, every changed path, each file read once.
// The second writes each change's part of the patch, source first (rank),
// reading the changed files again, while the patch stays within its
// limits; a change it cannot carry is marked Omitted with why, and so is
// a change that would not apply without one left out (a file added where
// the patch leaves another). The patch holds the parts in path order. It
// fails only when a pattern of opt.Exclude is bad, a tree cannot be
// listed, lists bad paths, or is over lim.Entries or lim.NameBytes
// (ErrTooLarge).
func Diff(old, new Tree, opt Options) (Patch, error) {
	lim, err := opt.Limits.normalize()
	if err != nil {
		return Patch{}, err
	}
	d := &differ{lim: lim, readLeft: lim.ReadBytes, patchLeft: lim.PatchBytes}
	if d.r, err = newRules(opt.Exclude, lim); err != nil {
		return Patch{}, err
	}
	if d.a, err = index(old, "original", lim, d.r.prune(func(string) bool { return true })); err != nil {
		return Patch{}, err
	}
	d.r.loadWorkspace(d.a, lim)
	inOrig := func(p string) bool { _, ok := d.a.m[p]; return ok }
	if d.b, err = index(new, "current", lim, d.r.prune(inOrig)); err != nil {
		return Patch{}, err
	}
	cs := d.compare()
	cs = pairRenames(cs)
	for _, c := range d.ranked(cs) {
		d.render(c)
	}
	d.resolve(cs)
	p := assemble(cs)
	p.Excluded = d.r.exclusions()
	return p, nil
}

// tree is one side, listed.
type tree struct {
	t Tree
	m map[string]Entry
	// leaves are the sorted paths of every entry but directories.
	leaves []string
}

// maxPath is the longest path a system call takes (PATH_MAX, with its
// NUL): git apply could not write a longer one.
const maxPath = 4095

// index lists t and checks what it returned: clean relative paths, each
// once, each beneath a listed directory, within the limits.
func index(t Tree, name string, lim Limits, prune func(string) bool) (*tree, error) {
	list, err := t.List(lim, prune)
	if err != nil {
		return nil, fmt.Errorf("changes: list the %s tree: %w", name, err)
	}
	count := NewListing(lim)
	tr := &tree{t: t, m: make(map[string]Entry, len(list))}
	for _, e := range list {
		if err := count.Add(len(e.Path), len(e.Target)); err != nil {
			return nil, fmt.Errorf("changes: the %s tree: %w", name, err)
		}
		if !validPath(e.Path) {
			return nil, fmt.Errorf("changes: the %s tree lists a bad path %s", name, QuotePath(e.Path))
		}
		if _, dup := tr.m[e.Path]; dup {
			return nil, fmt.Errorf("changes: the %s tree lists %s twice", name, QuotePath(e.Path))
		}
		if e.Type > Symlink {
			return nil, fmt.Errorf("changes: the %s tree lists %s with an unknown type", name, QuotePath(e.Path))
		}
		if e.Type == File && e.Size < 0 {
			return nil, fmt.Errorf("changes: the %s tree lists %s with a negative size", name, QuotePath(e.Path))
		}
		if e.Type == Other && e.Skipped == "" {
			e.Skipped = "not a regular file, directory or symbolic link"
		}
		if len(e.Path) > maxPath && e.Skipped == "" {
			e.Skipped = fmt.Sprintf("its path is longer than %d bytes, more than git apply can write", maxPath)
		}
		tr.m[e.Path] = e
		if e.Type != Dir {
			tr.leaves = append(tr.leaves, e.Path)
		}
	}
	for p := range tr.m {
		if dir := path.Dir(p); dir != "." && tr.m[dir].Type != Dir {
			return nil, fmt.Errorf("changes: the %s tree lists %s without its directory", name, QuotePath(p))
		}
	}
	slices.Sort(tr.leaves)
	return tr, nil
}

// validPath reports whether p is a clean relative "/"-separated path.
func validPath(p string) bool {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for _, e := range strings.Split(p, "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// side is one side of a change: a file or link, or nothing.
type side struct {
	ok bool
	e  Entry
	// sum is the content's SHA-256 and blob git's object name for it
	// (SHA-1 of "blob <size>\x00" and the content), both in hex.
	sum, blob string
	binary    bool
	// unread says why the content was not read, "" when it was.
	unread string
}

func (s side) mode() Mode {
	switch {
	case !s.ok || s.e.Type == Other:
		return 0
	case s.e.Type == Symlink:
		return ModeSymlink
	case s.e.Perm&0o100 != 0:
		return ModeExec
	}
	return ModeFile
}

func (s side) size() int64 {
	if s.e.Type == Symlink {
		return int64(len(s.e.Target))
	}
	return s.e.Size
}

// change is one changed path, and its part of the patch once rendered.
type change struct {
	path, oldPath string
	kind          Kind
	a, b          side
	omitted       omission
	section       []byte
}

// omission is why a change is left out of the patch, the zero value when
// it is not.
type omission struct {
	class OmitClass
	why   string
}

func omit(class OmitClass, why string) omission { return omission{class, why} }

type differ struct {
	lim       Limits
	r         *rules
	a, b      *tree
	readLeft  int64
	patchLeft int64
	carried   int
}

// compare is the first pass: every changed path, in path order, its
// files hashed.
func (d *differ) compare() []*change {
	paths := make([]string, 0, len(d.a.m)+len(d.b.m))
	for p := range d.a.m {
		paths = append(paths, p)
	}
	for p := range d.b.m {
		if _, ok := d.a.m[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []*change
	for _, p := range paths {
		if d.underSkipped(p) || d.r.underPruned(p) {
			continue
		}
		ea, okA := d.a.m[p]
		eb, okB := d.b.m[p]
		fa, fb := okA && ea.Type != Dir, okB && eb.Type != Dir
		if !fa && !fb && !(okA && ea.Skipped != "") && !(okB && eb.Skipped != "") {
			continue // a directory on both sides, or one side only
		}
		isDir := okB && eb.Type == Dir || !okB && ea.Type == Dir
		if class, ok := d.r.excludes(p, isDir, okA); ok {
			d.r.count(class, p, false)
			continue
		}
		c := &change{path: p}
		switch {
		case okB && eb.Skipped != "", okA && ea.Skipped != "":
			c.kind, c.omitted = Skipped, omit(OmitSkipped, skipReason(ea, eb))
			c.a, c.b = side{ok: fa, e: ea}, side{ok: fb, e: eb}
			out = append(out, c)
			continue
		case fa && !fb:
			c.kind, c.a = Deleted, d.side(d.a, ea)
		case !fa && fb:
			c.kind, c.b = Added, d.side(d.b, eb)
		case ea.Type != eb.Type:
			c.kind, c.a, c.b = TypeChanged, d.side(d.a, ea), d.side(d.b, eb)
		default:
			if !d.sameContent(c, ea, eb) {
				c.kind = Modified
			} else if c.a.mode() != c.b.mode() {
				c.kind = ModeChanged
			} else {
				continue
			}
		}
		if c.omitted.class == "" {
			c.omitted = refused(c)
		}
		out = append(out, c)
	}
	return out
}

// sameContent hashes both sides of a file or link into c and reports
// whether they are the same. When a side could not be read it says so in
// c.omitted: the path may be unchanged.
func (d *differ) sameContent(c *change, ea, eb Entry) bool {
	c.a, c.b = d.side(d.a, ea), d.side(d.b, eb)
	if ea.Type == File && ea.Size != eb.Size {
		return false
	}
	for _, s := range []side{c.a, c.b} {
		if s.unread != "" {
			c.omitted = omit(OmitUnread, "not compared, it may be unchanged: "+s.unread)
			return false
		}
	}
	return c.a.sum == c.b.sum
}

// underSkipped reports whether a directory above p, in either tree, was
// skipped: nothing beneath it is compared. (Beneath a skipped fifo in one
// tree, what the other has is compared, and resolve leaves it out.)
func (d *differ) underSkipped(p string) bool {
	for q := path.Dir(p); q != "."; q = path.Dir(q) {
		if e := d.a.m[q]; e.Type == Dir && e.Skipped != "" {
			return true
		}
		if e := d.b.m[q]; e.Type == Dir && e.Skipped != "" {
			return true
		}
	}
	return false
}

func skipReason(ea, eb Entry) string {
	if eb.Skipped != "" {
		return "not compared: " + eb.Skipped
	}
	return "not compared: in the original, " + ea.Skipped
}

// refused says why git apply would refuse c's paths, if it would.
func refused(c *change) omission {
	for _, s := range []side{c.a, c.b} {
		if s.ok {
			if why := gitRefuses(c.path, s.e.Type == Symlink); why != "" {
				return omit(OmitGit, why)
			}
		}
	}
	return omission{}
}

// side reads the content of e (a file or link of t) to hash it, within
// the read budget.
func (d *differ) side(t *tree, e Entry) side {
	s := side{ok: true, e: e}
	if e.Type == Symlink {
		s.sum, s.blob = hashes([]byte(e.Target))
		return s
	}
	if e.Size > d.readLeft {
		s.unread = fmt.Sprintf("not read: larger than what is left of the read budget of %d bytes (Limits.ReadBytes)", d.lim.ReadBytes)
		return s
	}
	d.readLeft -= e.Size
	h, g := sha256.New(), blobHash(e.Size)
	err := readExactly(t, e, func(chunk []byte) {
		h.Write(chunk)
		g.Write(chunk)
		s.binary = s.binary || bytes.IndexByte(chunk, 0) >= 0
	})
	if err != nil {
		s.unread = "could not be read: " + errText(err)
		return s
	}
	s.sum, s.blob = hex.EncodeToString(h.Sum(nil)), hex.EncodeToString(g.Sum(nil))
	return s
}

// blobHash starts git's object name of a blob of size bytes. SHA-1 is
// git's default object format (a patch's "index" line names the objects
// so, and git apply checks a binary patch against them); it is no
// integrity claim of airlock's, which is the manifest's SHA-256.
func blobHash(size int64) hash.Hash {
	g := sha1.New()
	g.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	return g
}

func hashes(content []byte) (sum, blob string) {
	h := sha256.Sum256(content)
	g := blobHash(int64(len(content)))
	g.Write(content)
	return hex.EncodeToString(h[:]), hex.EncodeToString(g.Sum(nil))
}

// readExactly reads the regular file e of t, exactly e.Size bytes, and
// hands them to fn in pieces.
func readExactly(t *tree, e Entry, fn func([]byte)) error {
	f, err := t.t.Open(e.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	r := io.LimitReader(f, e.Size+1)
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if n > e.Size {
			return errors.New("it grew while being read")
		}
		fn(buf[:k])
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if n != e.Size {
		return errors.New("it shrank while being read")
	}
	return nil
}

// errText is an error's text without the path a *fs.PathError adds (the
// manifest names the path).
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}

// content reads a side's content for the patch (the second pass), and
// checks that it is what the first pass hashed.
func (d *differ) content(t *tree, s side) ([]byte, omission) {
	if s.e.Type == Symlink {
		return []byte(s.e.Target), omission{}
	}
	if s.e.Size > d.lim.FileBytes {
		return nil, omit(OmitLarge, fmt.Sprintf("over the per-file limit of %d bytes (Limits.FileBytes)", d.lim.FileBytes))
	}
	if s.unread != "" {
		return nil, omit(OmitUnread, s.unread)
	}
	buf := make([]byte, 0, s.e.Size)
	if err := readExactly(t, s.e, func(chunk []byte) { buf = append(buf, chunk...) }); err != nil {
		return nil, omit(OmitUnread, "could not be read: "+errText(err))
	}
	if sum, _ := hashes(buf); sum != s.sum {
		return nil, omit(OmitUnread, "it changed while being read")
	}
	return buf, omission{}
}

// pairRenames turns each added file whose content (non-empty) is that of
// a deleted one into a rename; the deleted files are taken in path order.
func pairRenames(cs []*change) []*change {
	type key struct {
		size int64
		sum  string
	}
	candidate := func(c *change, s side) bool {
		return c.omitted.class == "" && s.e.Type == File && s.e.Size > 0 && s.sum != ""
	}
	deleted := map[key][]*change{}
	for _, c := range cs {
		if c.kind == Deleted && candidate(c, c.a) {
			k := key{c.a.e.Size, c.a.sum}
			deleted[k] = append(deleted[k], c)
		}
	}
	if len(deleted) == 0 {
		return cs
	}
	gone := map[*change]bool{}
	for _, c := range cs {
		if c.kind != Added || !candidate(c, c.b) {
			continue
		}
		k := key{c.b.e.Size, c.b.sum}
		if l := deleted[k]; len(l) > 0 {
			from := l[0]
			deleted[k] = l[1:]
			gone[from] = true
			c.kind, c.oldPath, c.a = Renamed, from.path, from.a
		}
	}
	return slices.DeleteFunc(cs, func(c *change) bool { return gone[c] })
}

// ranked orders the changes for the patch's limits: by rank, then the
// smaller first (the sizes of both sides), then in path order. It is the
// order in which they are given room in the patch, not theirs in it.
func (d *differ) ranked(cs []*change) []*change {
	type key struct {
		rank int
		size int64
	}
	keys := make(map[*change]key, len(cs))
	for _, c := range cs {
		if c.omitted.class == "" {
			keys[c] = key{d.rank(c), c.a.weight() + c.b.weight()}
		}
	}
	out := slices.Clone(cs)
	slices.SortStableFunc(out, func(x, y *change) int {
		kx, ky := keys[x], keys[y]
		return cmp.Or(cmp.Compare(kx.rank, ky.rank), cmp.Compare(kx.size, ky.size))
	})
	return out
}

// rank is a change's place when a limit bites, the source first: 0 for a
// change to a file or link the original had, text on both sides; 1 for
// a text file or link added; 2 for any other (a binary file); 3 for a
// change to a path of the original that its ignore files exclude (a
// build's output, a cache copied in with the workspace).
func (d *differ) rank(c *change) int {
	orig := c.path
	if c.kind == Renamed {
		orig = c.oldPath
	}
	switch {
	case c.a.ok && d.r.ignored(orig):
		return 3
	case c.a.binary || c.b.binary:
		return 2
	case !c.a.ok:
		return 1
	}
	return 0
}

// weight is a side's size for ranking, 0 for no file.
func (s side) weight() int64 {
	if !s.ok {
		return 0
	}
	return s.size()
}

// render is the second pass for one change: its part of the patch, if
// it fits.
func (d *differ) render(c *change) {
	if c.omitted.class != "" {
		return
	}
	if d.carried >= d.lim.Files {
		c.omitted = omit(OmitLimit, fmt.Sprintf("the patch is at its limit of %d changes (Limits.Files)", d.lim.Files))
		return
	}
	var b bytes.Buffer
	if why := d.section(&b, c, false); why.class != "" {
		c.omitted = why
		return
	}
	if int64(b.Len()) > d.patchLeft && (c.kind == Deleted || c.kind == TypeChanged) {
		b.Reset()
		if why := d.section(&b, c, true); why.class != "" {
			c.omitted = why
			return
		}
	}
	if int64(b.Len()) > d.patchLeft {
		c.omitted = omit(OmitLimit, fmt.Sprintf("the patch would exceed its limit of %d bytes (Limits.PatchBytes)", d.lim.PatchBytes))
		return
	}
	d.patchLeft -= int64(b.Len())
	d.carried++
	c.section = b.Bytes()
}

// section writes c's part of the patch to b, or says why it cannot.
// compact writes a deleted file as a binary patch to empty, without its
// content.
func (d *differ) section(b *bytes.Buffer, c *change, compact bool) omission {
	switch c.kind {
	case ModeChanged:
		writeGitHeader(b, c.path, c.path)
		writeLine(b, "old mode", c.a.mode().String())
		writeLine(b, "new mode", c.b.mode().String())
	case Renamed:
		writeGitHeader(b, c.oldPath, c.path)
		if c.a.mode() != c.b.mode() {
			writeLine(b, "old mode", c.a.mode().String())
			writeLine(b, "new mode", c.b.mode().String())
		}
		b.WriteString("similarity index 100%\n")
		writeLine(b, "rename from", QuotePath(c.oldPath))
		writeLine(b, "rename to", QuotePath(c.path))
	case Added:
		return d.added(b, c.path, c.b)
	case Deleted:
		return d.deleted(b, c.path, c.a, compact)
	case TypeChanged:
		if why := d.deleted(b, c.path, c.a, compact); why.class != "" {
			return why
		}
		return d.added(b, c.path, c.b)
	case Modified:
		return d.modified(b, c)
	}
	return omission{}
}

func (d *differ) added(b *bytes.Buffer, p string, s side) omission {
	content, why := d.content(d.b, s)
	if why.class != "" {
		return why
	}
	writeGitHeader(b, p, p)
	writeLine(b, "new file mode", s.mode().String())
	writeLine(b, "index", zeroID+".."+s.blob)
	return d.body(b, "", p, nil, content, s.binary)
}

// deleted writes a deletion: the removed lines, or a binary patch to an
// empty file (with the old content as its reverse hunk unless compact).
// A file over the per-file limit is always written compact: git apply
// checks the old content against the "index" line's object name.
func (d *differ) deleted(b *bytes.Buffer, p string, s side, compact bool) omission {
	if s.unread != "" {
		return omit(OmitUnread, s.unread)
	}
	compact = compact && s.e.Type == File || s.e.Type == File && s.e.Size > d.lim.FileBytes
	var content []byte
	if !compact {
		var why omission
		if content, why = d.content(d.a, s); why.class != "" {
			return why
		}
	}
	writeGitHeader(b, p, p)
	writeLine(b, "deleted file mode", s.mode().String())
	writeLine(b, "index", s.blob+".."+zeroID)
	if compact && s.e.Size > 0 {
		if err := writeBinary(b, nil, nil, false); err != nil {
			return omit(OmitUnread, "could not be written: "+err.Error())
		}
		return omission{}
	}
	return d.body(b, p, "", content, nil, s.binary)
}

func (d *differ) modified(b *bytes.Buffer, c *change) omission {
	old, why := d.content(d.a, c.a)
	if why.class != "" {
		return why
	}
	new, why := d.content(d.b, c.b)
	if why.class != "" {
		return why
	}
	writeGitHeader(b, c.path, c.path)
	index := c.a.blob + ".." + c.b.blob
	if c.a.mode() != c.b.mode() {
		writeLine(b, "old mode", c.a.mode().String())
		writeLine(b, "new mode", c.b.mode().String())
	} else {
		index += " " + c.a.mode().String()
	}
	writeLine(b, "index", index)
	return d.body(b, c.path, c.path, old, new, c.a.binary || c.b.binary)
}

// body writes the content part of a section: nothing between two empty
// sides, a binary patch (forward and reverse) or text hunks.
func (d *differ) body(b *bytes.Buffer, aPath, bPath string, old, new []byte, binary bool) omission {
	var err error
	switch {
	case len(old) == 0 && len(new) == 0:
	case binary:
		err = writeBinary(b, old, new, true)
	default:
		err = writeText(b, aPath, bPath, old, new, d.lim.DiffLines)
	}
	if err != nil {
		return omit(OmitUnread, "could not be written: "+err.Error())
	}
	return omission{}
}

// resolve leaves out every carried change that would not apply because
// of one left out: a file or link created at a path where the patch
// leaves one of the original's, above it or beneath it. Leaving one out
// can leave another path in place, so it repeats until nothing changes.
func (d *differ) resolve(cs []*change) {
	for {
		removed := map[string]bool{}
		for _, c := range cs {
			if c.section == nil {
				continue
			}
			switch c.kind {
			case Deleted, TypeChanged:
				removed[c.path] = true
			case Renamed:
				removed[c.oldPath] = true
			}
		}
		stays := func(p string) bool {
			e, ok := d.a.m[p]
			return ok && e.Type != Dir && !removed[p]
		}
		again := false
		for _, c := range cs {
			if c.section == nil || (c.kind != Added && c.kind != Renamed && c.kind != TypeChanged) {
				continue
			}
			if why := d.blocker(c.path, stays); why != "" {
				c.omitted = omit(OmitBlocked, why)
				d.patchLeft += int64(len(c.section))
				d.carried--
				c.section = nil
				again = true
			}
		}
		if !again {
			return
		}
	}
}

// blocker says what keeps a file from being created at p, if anything:
// an original file or link that stays above it or beneath it, or links
// of the original that loop on the way to it. git apply looks at p on
// disk before it removes the links the patch deletes (apply.c's
// check_to_create) and stops at ELOOP.
func (d *differ) blocker(p string, stays func(string) bool) string {
	for q := path.Dir(p); q != "."; q = path.Dir(q) {
		if stays(q) {
			return "it needs " + QuotePath(q) + " of the original removed, which the patch leaves out"
		}
	}
	if dir := path.Dir(p); dir != "." && d.a.loops(dir) {
		return "on the way to it the original's symbolic links loop, where git apply cannot look"
	}
	prefix := p + "/"
	i, _ := slices.BinarySearch(d.a.leaves, prefix)
	for ; i < len(d.a.leaves) && strings.HasPrefix(d.a.leaves[i], prefix); i++ {
		if stays(d.a.leaves[i]) {
			return "it needs " + QuotePath(d.a.leaves[i]) + " of the original removed, which the patch leaves out"
		}
	}
	return ""
}

// maxLinks is the kernel's limit on the links one path resolution
// follows (MAXSYMLINKS).
const maxLinks = 40

// loops reports whether resolving p in the tree, following links as the
// kernel does, would fail with ELOOP. A link out of the tree (absolute,
// or up past its root) cannot be known from here and counts as not
// looping; so do a missing entry and a file where a directory should be.
func (t *tree) loops(p string) bool {
	var at []string // the directory reached, resolved
	todo := strings.Split(p, "/")
	for follows := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(at) == 0 {
				return false
			}
			at = at[:len(at)-1]
			continue
		}
		e, ok := t.m[strings.Join(append(at, c), "/")]
		switch {
		case !ok:
			return false
		case e.Type == Dir:
			at = append(at, c)
		case e.Type == Symlink:
			if follows++; follows > maxLinks {
				return true
			}
			if path.IsAbs(e.Target) {
				return false
			}
			todo = append(strings.Split(e.Target, "/"), todo...)
		default:
			return false
		}
	}
	return false
}

// assemble joins the carried sections, in path order, and the manifest,
// with its omissions counted by class.
func assemble(cs []*change) Patch {
	p := Patch{Complete: true, Files: make([]FileChange, 0, len(cs))}
	n := 0
	for _, c := range cs {
		n += len(c.section)
	}
	p.Diff = make([]byte, 0, n)
	omitted := map[OmitClass]*Omission{}
	for _, c := range cs {
		p.Diff = append(p.Diff, c.section...)
		if cl := c.omitted.class; cl != "" {
			p.Complete = false
			if omitted[cl] == nil {
				omitted[cl] = &Omission{Class: cl, First: c.path}
			}
			omitted[cl].Count++
		}
		f := FileChange{
			Path: c.path, OldPath: c.oldPath, Kind: c.kind,
			OldMode: c.a.mode(), NewMode: c.b.mode(),
			OldSHA256: c.a.sum, NewSHA256: c.b.sum,
			Binary: c.a.binary || c.b.binary, Omitted: c.omitted.why, Class: c.omitted.class,
		}
		if c.a.ok {
			f.OldSize = c.a.size()
		}
		if c.b.ok {
			f.NewSize = c.b.size()
		}
		p.Files = append(p.Files, f)
	}
	for _, cl := range OmitClasses {
		if o := omitted[cl]; o != nil {
			p.Omissions = append(p.Omissions, *o)
		}
	}
	return p
}
