package mountinfo

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestParse reads every field, escapes undone, and refuses malformed
// lines.
func TestParse(t *testing.T) {
	ms, err := Parse([]byte("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n" +
		"90 27 0:25 /run/a\\040b /srv/with\\040space ro shared:1 master:2 - tmpfs tmp\\011fs rw,size=4k\n" +
		"75 143 0:4 net:[4026532179] /run/netns/airlock-2710 rw shared:2 - nsfs nsfs rw\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{ID: 27, Parent: 1, Dev: "254:0", Root: "/", Point: "/", Options: "rw,relatime", FSType: "ext4", Source: "/dev/vda", SuperOptions: "rw"},
		{ID: 90, Parent: 27, Dev: "0:25", Root: "/run/a b", Point: "/srv/with space", Options: "ro", FSType: "tmpfs", Source: "tmp\tfs", SuperOptions: "rw,size=4k"},
		{ID: 75, Parent: 143, Dev: "0:4", Root: "net:[4026532179]", Point: "/run/netns/airlock-2710", Options: "rw", FSType: "nsfs", Source: "nsfs", SuperOptions: "rw"},
	}
	if fmt.Sprint(ms) != fmt.Sprint(want) {
		t.Fatalf("parsed %+v\nwant   %+v", ms, want)
	}
	for _, bad := range []string{
		"x 1 0:1 / / rw - tmpfs t rw", "1 1 0:1 / / rw shared:1", "1 1 01 / / rw - tmpfs t rw", "1 1 0:1 / x rw - tmpfs t rw",
		"1 2 3", "1 2 3 4 5 6 7 8", "1 1 0:1 / / rw - tmpfs t", "1 1 0:1 / / rw - tmpfs t rw extra", "1 1 0:1 /\r/ /\u00a0 rw - tmpfs t rw x",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// escape is the kernel's mangling of a path or name in the table
// (seq_escape with " \t\n\\"): each of those bytes as a backslash and
// three octal digits, every other byte as it is.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(" \t\n\\", s[i]) >= 0 {
			fmt.Fprintf(&b, `\%03o`, s[i])
		} else {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// FuzzParseEscaped: a line as the kernel writes it, with any root, mount
// point, type and source (white space other than the escaped, such as
// \r, \v or U+00A0, included), parses back to exactly what was mounted.
func FuzzParseEscaped(f *testing.F) {
	f.Add("/a b", "/srv/with space", "tmpfs", `tmp\fs`)
	f.Add("/\r\v\u00a0\u0085", "/x\ty\nz", "fuse.sshfs", "")
	f.Add(`/\040`, `/\\134`, "-", "-")
	f.Fuzz(func(t *testing.T, root, point, fstype, source string) {
		if root == "" || fstype == "" {
			return
		}
		point = "/" + point
		line := fmt.Sprintf("36 35 98:0 %s %s rw,noatime master:1 - %s %s rw,errors=continue\n", escape(root), escape(point), escape(fstype), escape(source))
		ms, err := Parse([]byte(line))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want := Mount{ID: 36, Parent: 35, Dev: "98:0", Root: root, Point: point, Options: "rw,noatime", FSType: fstype, Source: source, SuperOptions: "rw,errors=continue"}
		if len(ms) != 1 || ms[0] != want {
			t.Fatalf("%q parsed to %+v, want %+v", line, ms, want)
		}
	})
}

// FuzzParse: any table parses or fails without panicking, and every
// mount it yields has a root and an absolute mount point.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("90 27 0:25 /a\\040b /srv\\134x ro - tmpfs tmpfs rw\n"))
	f.Add([]byte("1 1 0:1 / / - - - -\n\\"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := Parse(b)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.Root == "" || m.Point == "" || m.Point[0] != '/' || m.FSType == "" {
				t.Fatalf("mount %+v", m)
			}
		}
	})
}

// TestParseSelf parses this process's own table.
func TestParseSelf(t *testing.T) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skip(err)
	}
	ms, err := Parse(b)
	if err != nil || len(ms) == 0 {
		t.Fatalf("%d mounts, %v", len(ms), err)
	}
}
