package changes

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// The headers of git's patch format ("diff --git", "new file mode",
// "index", "rename from", ...) are written here by hand: go-udiff (and
// every other Go diff library) writes plain unified diffs, without git's
// extended headers, its quoting of names or its binary patches. The line
// diff itself is go-udiff's: the Go team's Myers diff (x/tools'
// internal/diff, which gopls uses) exported, with no dependencies, whose
// search depth is bounded, so contained code cannot make it quadratic.
// (sergi/go-diff bounds its work by a wall-clock timeout instead, which
// makes the patch depend on the machine's load; pmezard/go-difflib is
// unmaintained; go-git's diff is sergi/go-diff.)

// zeroID is git's object name of an absent side.
const zeroID = "0000000000000000000000000000000000000000"

// contextLines is git's default context around each hunk.
const contextLines = 3

// writeGitHeader writes the "diff --git" line. It departs from git's
// own output in one case: a name holding a space followed by a slash
// ("dir /f") is quoted, since git apply cannot split such a line unquoted
// and would refuse a part with no "---" line to name the file (an empty
// file added or deleted, a mode change), even one that git diff wrote.
func writeGitHeader(b *bytes.Buffer, oldPath, newPath string) {
	force := strings.Contains(oldPath, " /") || strings.Contains(newPath, " /")
	b.WriteString("diff --git ")
	b.WriteString(quotePrefixed("a/", oldPath, force))
	b.WriteByte(' ')
	b.WriteString(quotePrefixed("b/", newPath, force))
	b.WriteByte('\n')
}

// writeLine writes one header line: key, a space, value.
func writeLine(b *bytes.Buffer, key, value string) {
	b.WriteString(key)
	b.WriteByte(' ')
	b.WriteString(value)
	b.WriteByte('\n')
}

// writeText writes the "---" and "+++" lines and the hunks that turn old
// into new; aPath or bPath is "" for an absent side (/dev/null). An empty
// side, or one of more than maxLines lines, makes one hunk of both whole
// files (writeWhole): the line diff's memory grows with the lines, by a
// few hundred bytes each (a 4 MiB file of short lines took 1.7 GiB).
func writeText(b *bytes.Buffer, aPath, bPath string, old, new []byte, maxLines int) error {
	a, z := "/dev/null", "/dev/null"
	if aPath != "" {
		a = quotePrefixed("a/", aPath, false)
	}
	if bPath != "" {
		z = quotePrefixed("b/", bPath, false)
	}
	writeLine(b, "---", fileLabel(a))
	writeLine(b, "+++", fileLabel(z))
	if len(old) == 0 || len(new) == 0 || lineCount(old) > maxLines || lineCount(new) > maxLines {
		writeWhole(b, old, new)
		return nil
	}
	return writeHunks(b, string(old), string(new))
}

// noNewline follows a last line without its newline.
const noNewline = "\n\\ No newline at end of file\n"

// writeHunks writes the hunks, git's way: a hunk's range is "start,count"
// with ",count" left out when it is 1, and a start one line back when
// the count is 0; a line without its newline is followed by "\ No newline
// at end of file".
func writeHunks(b *bytes.Buffer, old, new string) error {
	u, err := udiff.ToUnifiedDiff("", "", old, udiff.Lines(old, new), contextLines)
	if err != nil {
		return err
	}
	for _, h := range u.Hunks {
		from, to := 0, 0
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Delete:
				from++
			case udiff.Insert:
				to++
			default:
				from++
				to++
			}
		}
		writeRanges(b, h.FromLine, from, h.ToLine, to)
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Delete:
				b.WriteByte('-')
			case udiff.Insert:
				b.WriteByte('+')
			default:
				b.WriteByte(' ')
			}
			b.WriteString(l.Content)
			if !strings.HasSuffix(l.Content, "\n") {
				b.WriteString(noNewline)
			}
		}
	}
	return nil
}

// writeWhole writes one hunk that removes every line of old and adds
// every line of new, straight from them: nothing is held per line.
func writeWhole(b *bytes.Buffer, old, new []byte) {
	n, m := lineCount(old), lineCount(new)
	writeRanges(b, 1, n, 1, m)
	b.Grow(len(old) + n + len(new) + m + 2*len(noNewline))
	for _, side := range []struct {
		mark byte
		text []byte
	}{{'-', old}, {'+', new}} {
		for text := side.text; len(text) > 0; {
			line := text
			if i := bytes.IndexByte(text, '\n'); i >= 0 {
				line = text[:i+1]
			}
			text = text[len(line):]
			b.WriteByte(side.mark)
			b.Write(line)
			if line[len(line)-1] != '\n' {
				b.WriteString(noNewline)
			}
		}
	}
}

// lineCount is the number of lines of text, the last one counted even
// without its newline.
func lineCount(text []byte) int {
	n := bytes.Count(text, []byte{'\n'})
	if len(text) > 0 && text[len(text)-1] != '\n' {
		n++
	}
	return n
}

// writeRanges writes a hunk's "@@ -from +to @@" line.
func writeRanges(b *bytes.Buffer, fromLine, from, toLine, to int) {
	b.WriteString("@@ -")
	b.WriteString(hunkRange(fromLine, from))
	b.WriteString(" +")
	b.WriteString(hunkRange(toLine, to))
	b.WriteString(" @@\n")
}

func hunkRange(start, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(start-1) + ",0"
	case 1:
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(count)
}
