package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// TestHostileInputs: inputs that would hang, blow up or slip through a
// loose parser are each a clear error at a line and column (or, for a
// UTF-8 byte order mark, skipped), quickly.
func TestHostileInputs(t *testing.T) {
	deepFlow := "toolScopes: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n"
	deepBlock := "toolScopes:\n  " + strings.Repeat("- ", 20000) + "x\n"
	laughs := "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
		"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ntoolScopes: {}\n"
	for _, c := range []struct{ name, src, want string }{
		// Byte order marks: UTF-8's is skipped, UTF-16's named.
		{"bom.json", "\xef\xbb\xbf{\"toolScopes\": {}}", ""},
		{"bom.yaml", "\xef\xbb\xbftoolScopes: {}\n", ""},
		{"bom", "\xef\xbb\xbf{\"toolScopes\": {}}", ""},
		{"utf16.json", "\xff\xfe{\x00}\x00", "utf16.json:1:1: invalid UTF-8 (byte 0xff): a policy is UTF-8 text\n\thint: the file starts with a UTF-16 byte order mark: save it as UTF-8"},
		// Bytes that would read differently from how they look.
		{"p.json", "{\"toolScopes\": {\"t\": {\"allow\": [{\"name\": \"x\", \"command\": \"c\xffat\"}]}}}",
			"p.json:1:60: invalid UTF-8 (byte 0xff): a policy is UTF-8 text\n\thint: save the file as UTF-8"},
		{"p.json", "{\"toolScopes\": {}}\n\x1b]0;pwned\x07", "p.json:2:1: control character U+001B in the policy\n\thint: remove it; in a JSON string write it as an escape if it is meant"},
		{"p.json", "{\"toolScopes\": {\"t\u009b\": {}}}", "p.json:1:19: control character U+009B in the policy\n\thint: remove it; in a JSON string write it as an escape if it is meant"},
		{"p.yaml", "toolScopes: {}\ncaps: {memoryMb: 1}\x7f\n", "p.yaml:2:20: control character U+007F in the policy\n\thint: remove it; in a JSON string write it as an escape if it is meant"},
		// YAML tags, anchors and aliases.
		{"p.yaml", "toolScopes: !foo {}\n", "p.yaml:1:13: YAML tag !foo is not allowed in a policy\n\thint: remove the tag; quote a value to make it a string"},
		{"p.yaml", "toolScopes: {}\ncommandSearchPath: !!seq [/bin]\n", "p.yaml:2:20: YAML tag !!seq is not allowed in a policy\n\thint: remove the tag; quote a value to make it a string"},
		{"p.yaml", "toolScopes: {}\ncaps: {memoryMb: !!int 5}\n", "p.yaml:2:18: YAML tag !!int is not allowed in a policy\n\thint: remove the tag; quote a value to make it a string"},
		{"p.yaml", "!foo toolScopes: {}\n", "p.yaml:1:1: YAML tag !foo is not allowed in a policy\n\thint: remove the tag; quote a value to make it a string"},
		{"p.yaml", laughs, "p.yaml:1:4: YAML anchors and aliases are not allowed in a policy\n\thint: write the value out in full"},
		{"p.yaml", "toolScopes: {}\n<<: {caps: {}}\n", "p.yaml:2:1: object keys must be plain strings"},
		// Nesting far too deep: a position, no stack blown.
		{"p.yaml", deepFlow, "p.yaml:1:1013: nesting too deep"},
		{"p.yaml", deepBlock, "p.yaml:2:2003: nesting too deep"},
		{"p.yaml", "toolScopes: " + strings.Repeat("[", 40) + strings.Repeat("]", 40), "p.yaml:1:45: nesting too deep"},
		{"p.json", `{"toolScopes": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}", "p.json:1:48: nesting too deep"},
		// A YAML error on the first line has a line too.
		{"p.yaml", "toolScopes: [\n", "p.yaml:1: invalid YAML: did not find expected node content"},
		{"p.yaml", "toolScopes: {]\n", "p.yaml:1: invalid YAML: did not find expected node content"},
		// Numbers out of range.
		{"p.json", `{"toolScopes": {}, "caps": {"memoryMb": 1e400}}`, "p.json:1:41: caps.memoryMb: 1e400 is not an integer in range\n\thint: it is far too large"},
		{"p.json", `{"toolScopes": {}, "caps": {"memoryMb": -1e400}}`, "p.json:1:41: caps.memoryMb: -1e400 is not an integer in range\n\thint: it is far too large"},
		{"p.json", `{"toolScopes": {}, "caps": {"memoryMb": 1e-400}}`, "p.json:1:41: caps.memoryMb: memoryMb must be positive, got 0\n\thint: remove the field to take the default"},
		{"p.json", `{"toolScopes": {}, "caps": {"cpuSeconds": 1e400}}`, "p.json:1:43: caps.cpuSeconds: 1e400 is not a number in range"},
		{"p.json", `{"toolScopes": {}, "caps": {"memoryMb": -0}}`, "p.json:1:41: caps.memoryMb: memoryMb must be positive, got 0\n\thint: remove the field to take the default"},
		{"p.json", `{"toolScopes": {}, "caps": {"cpuSeconds": -0}}`, "p.json:1:43: caps.cpuSeconds: cpuSeconds must be positive, got -0\n\thint: remove the field to take the default"},
		{"p.json", `{"toolScopes": {}, "caps": {"memoryMb": 1e3}}`, ""},
		// Names with white space or invisible characters anywhere.
		{"p.json", `{"toolScopes": {"read file": {}}}`, "p.json:1:30: toolScopes[\"read file\"]: tool name \"read file\" is empty or has white space or control characters"},
		{"p.json", "{\"toolScopes\": {\"read\u00a0file\": {}}}", "p.json:1:31: toolScopes[\"read\\u00a0file\"]: tool name \"read\\u00a0file\" is empty or has white space or control characters"},
		{"p.json", `{"toolScopes": {"read\u200bfile": {}}}`, "p.json:1:35: toolScopes[\"read\\u200bfile\"]: tool name \"read\\u200bfile\" is empty or has white space or control characters"},
		{"p.json", `{"toolScopes": {"t": {"allow": [{"name": "a b", "command": "ls"}]}}}`, "p.json:1:42: toolScopes.t.allow[0].name: rule name \"a b\" is empty or has white space or control characters"},
		{"p.json", `{"toolScopes": {}, "egress": {"taskAllowlist": {"web\tsearch": []}}}`, "p.json:1:64: egress.taskAllowlist[\"web\\tsearch\"]: task name \"web\\tsearch\" is empty or has white space or control characters"},
	} {
		start := time.Now()
		_, err := policy.Parse(c.name, []byte(c.src))
		took := time.Since(start)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s %.60q:\n got  %q\n want %q", c.name, c.src, got, c.want)
		}
		if took > 5*time.Second {
			t.Errorf("%s %.60q: took %v", c.name, c.src, took) // a guard against a hang, not a speed claim
		}
	}
}
