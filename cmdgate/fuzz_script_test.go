package cmdgate_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/airlock-sandbox/airlock/decision"
)

// fuzzShellPolicy has shell rules beside programs with deny and escalate
// rules on relative paths and words, and workspace programs.
const fuzzShellPolicy = `{"toolScopes": {"dev": {
	"allow": [{"name": "sh", "command": "sh", "shell": true},
	          {"name": "bash", "command": "bash", "shell": true},
	          {"name": "cat", "command": "cat", "allowExtraArgs": true},
	          {"name": "git", "command": "git", "allowExtraArgs": true},
	          {"name": "ls", "command": "ls", "argPatterns": [["-l"]]},
	          {"name": "bin", "command": "/workspace/bin/*", "allowExtraArgs": true}],
	"deny": [{"name": "no-env", "command": "cat", "argPatterns": [[".env"]], "allowExtraArgs": true},
	         {"name": "no-force", "command": "git", "argPatterns": [["push", "--force"]], "allowExtraArgs": true},
	         {"name": "no-rm", "command": "/workspace/bin/rm*", "allowExtraArgs": true}],
	"escalate": [{"name": "push", "command": "git", "argPatterns": [["push"]], "allowExtraArgs": true}]
}}}`

// FuzzScript checks a shell rule's promise against mvdan.cc/sh's own
// interpreter: a script the gate allows runs only commands the gate
// allows one by one, each from the directory the interpreter is in when
// it runs it, and opens files only in the trees the sandbox writes,
// whatever the script's variables hold, whatever its globs match and
// whatever each command exits with; a script it escalates runs none that
// the gate denies. The interpreter runs nothing: every command
// and file is a stand-in (a directory, but where cd fails: one whose name
// has "missing").
func FuzzScript(f *testing.F) {
	for _, s := range []string{
		"cd sub && cat x | cat", "cat .env", "cd sub; cat ../.env", "git push --force", "git $A $B", "cat $X",
		"cat *", "cat *.py", "bin/tool -x && cd bin && ./tool", "cd bin || ./rm", "if cd sub; then cat .env; fi",
		"for f in a .env; do cat $f; done", "sh -c 'cat .env'", "bash -c \"git $A\"", "cat \"$X\"y", "X=.env; cat $X",
		"cat <<EOF\n$X\nEOF", "ls -l", "ls $X", "cd /workspace/sub && cat .env", "(cd sub) && cat .env",
		"cat .e\\nv", "cat '.env'", "cat ./.env", "cat sub/../.env", "exec git push", "command git push",
		"case $X in a) cd sub;; esac; cat .env", "cd sub & cat .env", "! cd sub || cat .env",
		"cd missing || cat /workspace/.env", "cd missing; cat /workspace/.env", "cd sub && cd missing; cat /workspace/sub/.env",
		"if cd missing; then :; else cat /workspace/.env; fi",
		"cat a > /etc/x", "cat a 2>/dev/null >> ../x", "cd .. && cat a > x", "cat < /etc/passwd", "cat a >&2 > /tmp/x",
	} {
		f.Add(s, false, uint16(0))
		f.Add(s, true, uint16(0xffff))
	}
	g := gateFrom(f, fuzzShellPolicy)
	values := []string{".env", "push --force", "", "-l", "sub", "bin/rm", "*", "a b"}
	f.Fuzz(func(t *testing.T, src string, bash bool, statuses uint16) {
		shell, lang := "sh", syntax.LangPOSIX
		if bash {
			shell, lang = "bash", syntax.LangBash
		}
		d := g.Decide("dev", shell, []string{"-c", src}, ws)
		if d.Reason == "" || d.Gate != decision.GateCommand {
			t.Fatalf("decision without reason or gate: %+v", d)
		}
		if d.Verdict == decision.Deny {
			return
		}
		file, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
		if err != nil {
			t.Fatalf("%s -c %q: %s, but it does not parse: %v", shell, src, d.Verdict, err)
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			switch n.(type) {
			case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.FuncDecl, *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CoprocClause:
				t.Fatalf("%s -c %q: %s with a %T", shell, src, d.Verdict, n)
			}
			return true
		})
		for _, v := range values {
			runScript(t, g, file, d.Verdict, v, statuses)
		}
	})
}

// runScript runs a parsed script in the interpreter with every variable
// holding value, its commands exiting by the bits of statuses, and checks
// each command it runs against the gate.
func runScript(t *testing.T, g interface {
	Decide(tool, command string, args []string, dir string) decision.Decision
}, file *syntax.File, verdict decision.Verdict, value string, statuses uint16) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// A pipeline's commands run at once, each on a goroutine of the
	// interpreter's: the count is shared, and a failure is reported with
	// Errorf (Fatalf must not be called off the test's goroutine).
	var count atomic.Int64
	exec := func(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
		return func(ctx context.Context, args []string) error {
			hc := interp.HandlerCtx(ctx)
			d := g.Decide("dev", args[0], args[1:], hc.Dir)
			if d.Verdict == decision.Deny || verdict == decision.Allow && d.Verdict != decision.Allow {
				t.Errorf("the script was %s, but it runs %q from %s, which is %s: %s", verdict, args, hc.Dir, d.Verdict, d.Reason)
				cancel()
				return interp.ExitStatus(1)
			}
			n := count.Add(1)
			if n > 64 {
				cancel()
			}
			if statuses>>(n%16)&1 == 0 {
				return nil
			}
			return interp.ExitStatus(1)
		}
	}
	r, err := interp.New(interp.Env(anyValue(value)), interp.StdIO(nil, io.Discard, io.Discard),
		interp.ExecHandlers(exec),
		interp.OpenHandler(func(ctx context.Context, name string, _ int, _ os.FileMode) (io.ReadWriteCloser, error) {
			p := name
			if !path.IsAbs(p) {
				p = path.Join(interp.HandlerCtx(ctx).Dir, p)
			}
			tree, _, _ := strings.Cut(strings.TrimPrefix(path.Clean(p), "/"), "/")
			if verdict == decision.Allow && !strings.HasPrefix(p, "/dev/std") && p != "/dev/null" && tree != "workspace" && tree != "tmp" && tree != "findings" {
				t.Errorf("the script was allowed, but it opens %q from %s", name, interp.HandlerCtx(ctx).Dir)
				cancel()
				return nil, fs.ErrPermission
			}
			return nopFile{}, nil
		}),
		interp.StatHandler(func(_ context.Context, name string, _ bool) (fs.FileInfo, error) {
			if strings.Contains(name, "missing") { // where cd fails
				return nil, fs.ErrNotExist
			}
			return dirInfo(name), nil
		}),
		interp.AccessHandler(func(context.Context, string, interp.AccessMode) error { return nil }),
		interp.ReadDirHandler2(func(context.Context, string) ([]fs.DirEntry, error) {
			return []fs.DirEntry{fs.FileInfoToDirEntry(dirInfo(".env")), fs.FileInfoToDirEntry(dirInfo("a.py")), fs.FileInfoToDirEntry(dirInfo("push"))}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	r.Dir = ws           // not interp.Dir, which stats the host's
	_ = r.Run(ctx, file) // the script's status, or a stand-in's failure: the gate's is checked as it runs
}

// anyValue is an environment in which every variable holds one value
// (IFS and the directories keep the shell's own).
type anyValue string

func (v anyValue) Get(name string) expand.Variable {
	switch name {
	case "IFS", "PWD", "OLDPWD", "HOME", "OPTIND", "PATH":
		return expand.Variable{}
	}
	return expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: string(v)}
}

func (v anyValue) Each(func(name string, vr expand.Variable) bool) {}

// dirInfo is a stand-in file: every path is a directory.
type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

// nopFile is a stand-in for every file a redirection opens.
type nopFile struct{}

func (nopFile) Read([]byte) (int, error)    { return 0, io.EOF }
func (nopFile) Write(p []byte) (int, error) { return len(p), nil }
func (nopFile) Close() error                { return nil }
