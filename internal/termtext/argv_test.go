package termtext

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode"
)

// TestArgv checks that what Argv prints has nothing a terminal interprets,
// and that bash, given the line, runs exactly the argv.
func TestArgv(t *testing.T) {
	argv := []string{"git", "push", "it's", "a b", "", "$(id)", "\x1b]0;title\x07", "ab\u202ecd", "\xff\xfe", "é", "new\nline"}
	line := Argv(argv)
	for _, r := range line {
		if !unicode.IsPrint(r) || r == 0xfffd {
			t.Fatalf("Argv printed %U raw: %q", r, line)
		}
	}
	if !strings.HasPrefix(line, "git push ") {
		t.Errorf("plain words quoted: %q", line)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to check the round trip")
	}
	cmd := exec.Command(bash, "-c", `printf '%s\0' `+line)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8") // a \u escape is UTF-8 in a UTF-8 locale only
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if strings.Join(got, "\x00") != strings.Join(argv, "\x00") {
		t.Errorf("bash read back %q, want %q", got, argv)
	}
	if got := Argv([]string{"a\x00b"}); got != `"a\x00b"` {
		t.Errorf("NUL argument: %q", got)
	}
}
