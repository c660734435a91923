package enforcer_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// programsPolicy lets the dev tool make a venv with the system's python3
// and run the workspace programs in it, and a workspace script.
const programsPolicy = `{
  "toolScopes": {
    "dev": {"allow": [
      {"name": "python3", "command": "python3", "allowExtraArgs": true},
      {"name": "venv-python", "command": "/workspace/.venv/bin/python", "allowExtraArgs": true},
      {"name": "venv", "command": "/workspace/.venv/bin/*", "allowExtraArgs": true},
      {"name": "tool", "command": "/workspace/tool.sh", "allowExtraArgs": true}]}
  },
  "session": {"diskWriteMb": 256, "memoryMb": 1024},
  "caps": {"cpuSeconds": 30, "wallSeconds": 60}
}`

// shellsPolicy lets the dev tool run sh and bash scripts of a few
// programs.
const shellsPolicy = `{
  "toolScopes": {
    "dev": {"allow": [
      {"name": "sh", "command": "sh", "shell": true},
      {"name": "bash", "command": "bash", "shell": true},
      {"name": "cat", "command": "cat", "allowExtraArgs": true},
      {"name": "wc", "command": "wc", "allowExtraArgs": true},
      {"name": "echo", "command": "echo", "allowExtraArgs": true}]}
  }
}`

// programsWorkspace is a host workspace with a script, a file two lines
// long in sub/, and a cat of the agent's in bin/.
func programsWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for name, body := range map[string]string{"tool.sh": "#!/bin/sh\necho \"tool $1 from $0\"\n", "sub/x": "one\ntwo\n",
		"bin/cat": "#!/bin/sh\necho planted\n"} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// TestWorkspaceProgramsInSession is the case: a venv made in a
// session, then its programs run by a glob rule, resolved inside the
// sandbox (they are not on the host), by absolute and relative path, a
// link inside the tree followed and named; a link out of the tree is
// refused, and nothing runs.
func TestWorkspaceProgramsInSession(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	f := newFixtureWith(t, programsPolicy, false, nil)
	s := openSession(t, f, enforcer.SessionRequest{Workspace: programsWorkspace(t)})
	var out bytes.Buffer
	step := func(command string, args ...string) enforcer.Result {
		t.Helper()
		out.Reset()
		res, err := s.Exec(context.Background(), enforcer.StepRequest{Tool: "dev", Command: command, Args: args, Stdout: &out, Stderr: &out})
		if err != nil && res.ExitCode != enforcer.ExitCannotExec {
			t.Fatalf("%s %q: %v", command, args, err)
		}
		checkResult(t, res)
		return res
	}
	if r := step("python3", "-m", "venv", "--copies", "--without-pip", ".venv"); r.ExitCode != 0 {
		t.Fatalf("python3 -m venv: %+v\n%s", r, out.String())
	}
	r := step("/workspace/.venv/bin/python", "-c", "import sys; print(sys.prefix)")
	if r.ExitCode != 0 || out.String() != "/workspace/.venv\n" || r.Rule != "venv-python" || r.Path != "/workspace/.venv/bin/python" {
		t.Fatalf("the venv's python: exit %d rule %q path %q error %q output %q", r.ExitCode, r.Rule, r.Path, r.Error, out.String())
	}
	if r := step(".venv/bin/python3", "-c", "print(2)"); r.ExitCode != 0 || out.String() != "2\n" || r.Rule != "venv" || r.Path != "/workspace/.venv/bin/python3" {
		t.Fatalf("by a relative path: %+v %q", r, out.String())
	}
	// Links: one inside the tree is followed, and the result names the
	// file it led to; one out of it is refused before anything runs.
	if r := step("/workspace/.venv/bin/python", "-c", "import os; os.symlink('python', '.venv/bin/inside'); os.symlink('/bin/sh', '.venv/bin/outside'); "+
		"os.symlink('../../tool.sh', '.venv/bin/up')"); r.ExitCode != 0 {
		t.Fatalf("make the links: %+v %q", r, out.String())
	}
	if r := step(".venv/bin/inside", "-c", "print(3)"); r.ExitCode != 0 || out.String() != "3\n" || r.Path != "/workspace/.venv/bin/python" {
		t.Fatalf("a link inside the tree: exit %d path %q output %q", r.ExitCode, r.Path, out.String())
	}
	if r := step(".venv/bin/up", "x"); r.ExitCode != 0 || out.String() != "tool x from /workspace/tool.sh\n" || r.Path != "/workspace/tool.sh" {
		t.Fatalf("a link to a script inside the tree: exit %d path %q output %q", r.ExitCode, r.Path, out.String())
	}
	r = step("/workspace/.venv/bin/outside", "-c", "echo escaped")
	if r.ExitCode != enforcer.ExitCannotExec || out.Len() != 0 || r.Path != "" ||
		!strings.Contains(r.Error, "/workspace/.venv/bin/outside leads out of /workspace by a symbolic link") {
		t.Fatalf("a link out of the tree: exit %d path %q error %q output %q", r.ExitCode, r.Path, r.Error, out.String())
	}
	// The outcome's record names the file that ran.
	var ran []string
	for _, ev := range f.events(s.ID()) {
		if ev.Kind == audit.KindResource && ev.Context.Path != "" {
			ran = append(ran, ev.Context.Path)
		}
	}
	if strings.Join(ran, " ") != "/usr/bin/python3 /workspace/.venv/bin/python /workspace/.venv/bin/python3 /workspace/.venv/bin/python /workspace/.venv/bin/python /workspace/tool.sh" {
		t.Errorf("paths recorded: %q", ran)
	}
	closeAll(t, s)
}

// TestWorkspaceProgramRun: airlock run of a workspace program (a script
// of the host's workspace, copied in), by its path and a relative one.
func TestWorkspaceProgramRun(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixtureWith(t, programsPolicy, false, nil)
	var out bytes.Buffer
	for _, command := range []string{"/workspace/tool.sh", "./tool.sh"} {
		out.Reset()
		res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "dev", Command: command, Args: []string{"y"},
			Workspace: programsWorkspace(t), Stdout: &out, Stderr: &out})
		if err != nil || res.ExitCode != 0 || out.String() != "tool y from /workspace/tool.sh\n" || res.Path != "/workspace/tool.sh" {
			t.Fatalf("run %s: %v exit %d path %q error %q output %q", command, err, res.ExitCode, res.Path, res.Error, out.String())
		}
		checkResult(t, res)
	}
}

// TestEscalatedWorkspaceProgram: an escalated workspace program's
// approval names its path, and its digest as not bound (only the init
// finds the file); once approved it runs as resolved inside.
func TestEscalatedWorkspaceProgram(t *testing.T) {
	testutil.RequireRoot(t)
	var asked approval.Request
	ap := approval.ApproverFunc(func(_ context.Context, r approval.Request) (approval.Answer, error) {
		asked = r
		return approval.Answer{Allow: true, By: "test"}, nil
	})
	f := newFixtureWith(t, `{"toolScopes": {"dev": {"escalate": [{"name": "ask", "command": "/workspace/*.sh", "allowExtraArgs": true}]}}}`,
		false, nil, func(o *enforcer.Options) { o.Approver = ap })
	var out bytes.Buffer
	res, err := f.enf.Run(context.Background(), enforcer.Request{Tool: "dev", Command: "./tool.sh", Args: []string{"z"},
		Workspace: programsWorkspace(t), Stdout: &out, Stderr: &out})
	if err != nil || res.ExitCode != 0 || out.String() != "tool z from /workspace/tool.sh\n" || res.Approval == nil {
		t.Fatalf("escalated ./tool.sh: %v exit %d error %q output %q approval %+v", err, res.ExitCode, res.Error, out.String(), res.Approval)
	}
	if asked.Program != "/workspace/tool.sh" || asked.ProgramDigest != enforcer.WorkspaceProgram {
		t.Errorf("the approval asked for program %q digest %q", asked.Program, asked.ProgramDigest)
	}
}

// TestShellScriptsInSession: sh and bash scripts decided command by
// command run in the real shell, exactly as written; what the gate cannot
// read is refused with its reason and runs nothing; the agent's
// environment cannot change what the shell runs (PATH, BASH_ENV, ENV,
// exported functions) nor make bash -l run its profile files.
func TestShellScriptsInSession(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	f := newFixtureWith(t, shellsPolicy, false, nil)
	s := openSession(t, f, enforcer.SessionRequest{Workspace: programsWorkspace(t)})
	var out bytes.Buffer
	step := func(env []string, shell, script string) enforcer.Result {
		t.Helper()
		out.Reset()
		flag := "-c"
		if shell == "bash" {
			flag = "-lc"
		}
		res, err := s.Exec(context.Background(), enforcer.StepRequest{Tool: "dev", Command: shell, Args: []string{flag, script}, Env: env, Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatalf("%s -c %q: %v", shell, script, err)
		}
		checkResult(t, res)
		return res
	}
	r := step(nil, "sh", "cd sub && cat x | wc -l")
	if r.ExitCode != 0 || strings.TrimSpace(out.String()) != "2" || r.Rule != "sh" || r.Script == nil || len(r.Script.Commands) != 3 {
		t.Fatalf("sh -c 'cd sub && cat x | wc -l': %+v %q", r, out.String())
	}
	for _, c := range []struct{ script, reason string }{
		{"eval echo hi", "in its script, eval at 1:1: the shell builtin eval runs a string as commands: deny"},
		{"echo $(cat sub/x)", "in its script, $(...) at 1:6: a command substitution: its output is not known before the script runs: deny"},
		{"cat sub/x; `echo cat` sub/x", "in its script, `...` at 1:12: a command substitution"},
	} {
		r := step(nil, "sh", c.script)
		if r.ExitCode != enforcer.ExitDenied || !strings.Contains(r.Reason, c.reason) || out.Len() != 0 {
			t.Errorf("sh -c %q: exit %d %q output %q; want 77 with %q", c.script, r.ExitCode, r.Reason, out.String(), c.reason)
		}
	}
	// The agent's environment: a planted cat on its PATH, startup files
	// through ENV and BASH_ENV, an exported function, and a ~/.profile
	// (HOME is the workspace) that bash -l would run.
	if r := step(nil, "sh", "echo 'echo planted' > .profile && echo 'echo planted' > env.sh"); r.ExitCode != 0 {
		t.Fatalf("write the files: %+v %q", r, out.String())
	}
	env := []string{"PATH=/workspace/bin:/usr/bin:/bin", "ENV=/workspace/env.sh", "BASH_ENV=/workspace/env.sh", "BASH_FUNC_cat%%=() { echo planted; }"}
	for _, shell := range []string{"sh", "bash"} {
		if r := step(env, shell, "cat sub/x"); r.ExitCode != 0 || out.String() != "one\ntwo\n" {
			t.Errorf("%s with the agent's environment: exit %d output %q", shell, r.ExitCode, out.String())
		}
	}
	closeAll(t, s)
}
