package changes

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// gen turns fuzz bytes into choices; past the end it chooses 0.
type gen struct{ data []byte }

func (g *gen) n(k int) int {
	if len(g.data) == 0 || k <= 1 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return int(b) % k
}

var (
	fuzzNames = []string{"a", "b", "c", "d", "sp ace", "q\"t", "caf\u00e9", "n\nl", "t\tb", `x\y`, ".git", "git~1",
		".gitmodules", "-", "trailing ", "\x01",
		".git:x", ".g\u200cit", "x b"}
	fuzzLines   = []string{"one\n", "two\n", "three\n", "four\r\n", "\n", "  indented\n", "five\n", "six\n"}
	fuzzTargets = []string{"a", "../x", "/etc/shadow", "..", "d/b", "sp ace"}
)

func (g *gen) path() string {
	parts := make([]string, 1+g.n(3))
	for i := range parts {
		parts[i] = fuzzNames[g.n(len(fuzzNames))]
	}
	return strings.Join(parts, "/")
}

func (g *gen) text() string {
	var b strings.Builder
	for range g.n(25) {
		b.WriteString(fuzzLines[g.n(len(fuzzLines))])
	}
	s := b.String()
	if g.n(4) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

func (g *gen) node() node {
	switch g.n(9) {
	case 8:
		return node{fifo: true}
	case 0:
		return link(fuzzTargets[g.n(len(fuzzTargets))])
	case 1:
		return file("")
	case 2:
		return file(randomBytes(uint64(g.n(256)), 1+g.n(200)))
	case 3:
		return execFile(g.text())
	}
	return file(g.text())
}

// edit changes a file's lines a little, or its mode, or its type.
func (g *gen) edit(n node) node {
	if n.link != "" || n.fifo || g.n(6) == 0 {
		return g.node()
	}
	switch g.n(5) {
	case 0:
		n.exec = !n.exec
		return n
	case 1:
		return node{content: n.content + g.text(), exec: n.exec}
	}
	ls := strings.SplitAfter(n.content, "\n")
	for range 1 + g.n(3) {
		i := g.n(len(ls) + 1)
		switch g.n(3) {
		case 0:
			ls = slices.Insert(ls, i, fuzzLines[g.n(len(fuzzLines))])
		case 1:
			if i < len(ls) {
				ls = slices.Delete(ls, i, i+1)
			}
		default:
			if i < len(ls) {
				ls[i] = fuzzLines[g.n(len(fuzzLines))]
			}
		}
	}
	n.content = strings.Join(ls, "")
	return n
}

// fits reports whether p can join tree t: no file or link above it, and
// nothing beneath it.
func fits(t map[string]node, p string) bool {
	if _, ok := t[p]; ok {
		return false
	}
	for q := path.Dir(p); q != "."; q = path.Dir(q) {
		if _, ok := t[q]; ok {
			return false
		}
	}
	for q := range t {
		if strings.HasPrefix(q, p+"/") {
			return false
		}
	}
	return true
}

// trees makes an original tree and a modified one from the fuzz bytes,
// and the limits to compare them with.
func trees(data []byte) (orig, mod map[string]node, lim Limits) {
	g := &gen{data: data}
	orig, mod = map[string]node{}, map[string]node{}
	for range 1 + g.n(10) {
		if p := g.path(); fits(orig, p) {
			orig[p] = g.node()
		}
	}
	names := make([]string, 0, len(orig))
	for p := range orig {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		n := orig[p]
		switch g.n(6) {
		case 0: // deleted
		case 1: // moved, maybe edited
			if q := g.path(); fits(mod, q) {
				if g.n(2) == 0 {
					n = g.edit(n)
				}
				mod[q] = n
			}
		case 2:
			if fits(mod, p) {
				mod[p] = g.edit(n)
			}
		default:
			if fits(mod, p) {
				mod[p] = n
			}
		}
	}
	for range g.n(5) {
		if p := g.path(); fits(mod, p) {
			mod[p] = g.node()
		}
	}
	switch g.n(5) {
	case 0:
		lim = Limits{PatchBytes: int64(200 + 50*g.n(40))}
	case 1:
		lim = Limits{Files: 1 + g.n(4)}
	case 2:
		lim = Limits{FileBytes: int64(1 + g.n(100))}
	case 3:
		lim = Limits{DiffLines: 1 + g.n(8)}
	}
	return orig, mod, lim
}

// FuzzDiff makes random original and modified trees, and checks that
// git apply of the patch turns a copy of the original into the modified
// tree (but for what the manifest says it left out), within the limits.
// Its seed corpus runs in every go test: each seed is one cp and two git
// runs.
func FuzzDiff(f *testing.F) {
	for _, seed := range []string{
		"\x05\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
		"\x09\x00\x00\x05\x05\x01\x01\x02\x03\x02\x02\x02\x03\x03\x03\x01\x00\x04\x07\x02\x05\x01",
		"\x08\x10\x21\x32\x43\x54\x65\x76\x87\x98\xa9\xba\xcb\xdc\xed\xfe\x0f\x1e\x2d\x3c\x4b\x5a\x69\x78",
		"\x03\x04\x02\x06\x01\x03\x07\x05\x02\x02\x02\x01\x01\x04\x05\x00\x03\x03\x03",
		"\x09\x03\x0a\x03\x03\x01\x0b\x01\x01\x02\x02\x05\x0c\x01\x01\x02\x01\x03\x00\x00\x00\x00\x04\x03\x01",
		strings.Repeat("\x07\x11\x23\x05\x02\x13", 12),
		strings.Repeat("\x0a\x02\x01\x04\x09", 20),
		strings.Repeat("\xff\x81\x42\x24\x18", 24),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig, mod, lim := trees(data)
		origDir, modDir := writeTree(t, orig), writeTree(t, mod)
		p := diffDirs(t, origDir, modDir, lim)
		lim, _ = lim.normalize()
		if int64(len(p.Diff)) > lim.PatchBytes {
			t.Fatalf("patch of %d bytes over its limit of %d", len(p.Diff), lim.PatchBytes)
		}
		carried := strings.Count(string(p.Diff), "\ndiff --git ")
		if len(p.Diff) > 0 {
			carried++
		}
		if carried > lim.Files*2 { // a typechange is two parts
			t.Fatalf("%d parts in the patch, over its limit of %d changes", carried, lim.Files)
		}
		checkApplies(t, origDir, modDir, p)
	})
}
