package image

import (
	"strings"
)

// Whiteout markers (OCI image spec, "Representing Changes", whiteouts).
const (
	whiteoutPrefix = ".wh."
	whiteoutMeta   = ".wh..wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// cleanEntryName turns a tar entry name into a path relative to the root
// ("." for the root itself), or returns a fixed refusal reason. Names are
// never re-rooted: an absolute name or one with a ".." component is refused
// outright rather than silently clamped, since no honest image builder
// writes either and a refused unpack is safer than a surprising one.
func cleanEntryName(name string) (string, string) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return "", ReasonEmptyName
	}
	if name[0] == '/' {
		return "", ReasonAbsolute
	}
	parts := make([]string, 0, strings.Count(name, "/")+1)
	for p := range strings.SplitSeq(name, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return "", ReasonDotDot
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ".", ""
	}
	return strings.Join(parts, "/"), ""
}

// splitRel splits a cleaned relative path into its parent ("." at the top)
// and its last component.
func splitRel(rel string) (dir, base string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ".", rel
	}
	return rel[:i], rel[i+1:]
}

// joinRel joins a cleaned relative directory and a name.
func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// whiteoutKind classifies an entry's last path component: a plain entry, a
// whiteout of target, an opaque-directory marker, or another whiteout meta
// file (aufs ".wh..wh.plnk" and the like, which are skipped).
type whiteoutKind int

const (
	notWhiteout whiteoutKind = iota
	whiteoutFile
	whiteoutDirOpaque
	whiteoutOtherMeta
)

// parseWhiteout returns the kind of base and, for a whiteout, the name it
// deletes ("" when that name is invalid: empty, "." or "..").
func parseWhiteout(base string) (whiteoutKind, string) {
	switch {
	case !strings.HasPrefix(base, whiteoutPrefix):
		return notWhiteout, ""
	case base == whiteoutOpaque:
		return whiteoutDirOpaque, ""
	case strings.HasPrefix(base, whiteoutMeta):
		return whiteoutOtherMeta, ""
	}
	target := base[len(whiteoutPrefix):]
	if target == "" || target == "." || target == ".." {
		return whiteoutFile, ""
	}
	return whiteoutFile, target
}

// within reports whether rel is dir or lies below it.
func within(rel, dir string) bool {
	if dir == "." {
		return true
	}
	return rel == dir || strings.HasPrefix(rel, dir+"/")
}
