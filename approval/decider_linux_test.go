package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script writes a /bin/sh decider and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "decider")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// printing is a decider that prints out exactly and exits 0.
func printing(t *testing.T, out string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "answer")
	if err := os.WriteFile(f, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return script(t, "exec cat "+f)
}

func ask(t *testing.T, d *Decider, r Request) Answer {
	t.Helper()
	a, err := d.Approve(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if a.By != "decider "+d.Argv[0] || a.At.IsZero() {
		t.Errorf("answer not attributed: %+v", a)
	}
	return a
}

func TestDeciderAnswers(t *testing.T) {
	r := sample()
	if a := ask(t, &Decider{Argv: []string{printing(t, `{"decision":"allow","reason":"ticket OPS-1"}`)}}, r); !a.Allow || a.Reason != "ticket OPS-1" {
		t.Errorf("allow: %+v", a)
	}
	if a := ask(t, &Decider{Argv: []string{printing(t, " {\"decision\": \"allow\"}\n")}}, r); !a.Allow || a.Reason != "" {
		t.Errorf("allow without a reason: %+v", a)
	}
	if a := ask(t, &Decider{Argv: []string{printing(t, `{"decision":"deny","reason":"not today"}`)}}, r); a.Allow || a.Reason != "not today" {
		t.Errorf("deny: %+v", a)
	}
	if a := ask(t, &Decider{Argv: []string{printing(t, `{"decision":"deny"}`)}}, r); a.Allow || a.Reason != "the decider denied it" {
		t.Errorf("deny without a reason: %+v", a)
	}
}

// TestDeciderMalformed: every answer that is not exactly the protocol's
// is a denial that says why.
func TestDeciderMalformed(t *testing.T) {
	for out, want := range map[string]string{
		"":          "empty decider answer",
		"allow":     "is not one JSON object",
		`"allow"`:   "is not one JSON object",
		`["allow"]`: "is not one JSON object",
		`{"decision":"allow"} {"decision":"allow"}`:                         "is not one JSON object",
		`{"decision":"allow"}x`:                                             "is not one JSON object",
		`{"decision":"allow","extra":1}`:                                    `unknown field "extra"`,
		`{"decision":"allow","approved":true}`:                              `unknown field "approved"`,
		`{"Decision":"allow"}`:                                              `unknown field "Decision"`,
		`{"decision":"deny","decision":"allow"}`:                            "duplicate",
		`{"decision":null}`:                                                 "null",
		`{"decision":true}`:                                                 "is not one JSON object",
		`{"reason":"fine"}`:                                                 `answered decision ""`,
		`{"decision":"ALLOW"}`:                                              `answered decision "ALLOW"`,
		`{"decision":"yes"}`:                                                `answered decision "yes"`,
		`{"decision":"allow","reason":"a\u001b[2Jb"}`:                       "control characters",
		`{"decision":"allow","reason":"a\nb"}`:                              "control characters",
		"{\"decision\":\"allow\",\"reason\":\"\xff\"}":                      "not UTF-8",
		`{"decision":"allow","reason":"` + strings.Repeat("r", 1025) + `"}`: "has 1025 bytes, more than 1024",
	} {
		a := ask(t, &Decider{Argv: []string{printing(t, out)}}, sample())
		if a.Allow || !strings.Contains(a.Reason, want) || !strings.HasSuffix(a.Reason, ": deny") {
			t.Errorf("%q: got %+v, want a denial saying %q", out, a, want)
		}
	}
}

func TestDeciderExits(t *testing.T) {
	for body, want := range map[string]string{
		`echo '{"decision":"allow"}'; exit 1`:                           "the decider exited with status 1: deny",
		`echo '{"decision":"allow"}'; echo "no\033[2J way" >&2; exit 3`: `exited with status 3; its stderr: no\x1b[2J way: deny`,
		`echo '{"decision":"allow"}'; kill -SEGV $$`:                    "was killed by signal 11 (segmentation fault)",
		`exit 0`: "empty decider answer",
	} {
		a := ask(t, &Decider{Argv: []string{script(t, body)}}, sample())
		if a.Allow || !strings.Contains(a.Reason, want) {
			t.Errorf("%s: got %+v, want a denial saying %q", body, a, want)
		}
	}
	for argv, want := range map[string]string{
		"/nonexistent/decider": "the decider could not be started",
		"decider":              "not named by an absolute path",
		"":                     "not named by an absolute path",
	} {
		a, err := (&Decider{Argv: []string{argv}}).Approve(context.Background(), sample())
		if err != nil || a.Allow || !strings.Contains(a.Reason, want) {
			t.Errorf("%q: got %+v, %v, want a denial saying %q", argv, a, err, want)
		}
	}
}

// TestDeciderInput: the decider reads the request — all it binds — and
// the protocol version on stdin, runs in / with PATH and HOME only.
func TestDeciderInput(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AIRLOCK_TEST_SECRET", "hunter2")
	d := &Decider{Argv: []string{script(t, `cat > `+dir+`/stdin; env > `+dir+`/env; pwd > `+dir+`/pwd; echo '{"decision":"allow"}'`), "--flag"}}
	r := sample()
	r.ID, r.Justification = "apr-00000000000000000000000000000001", "pushes go through review"
	r.Env, r.Cwd, r.Workspace, r.Image = []string{"PATH=/tmp:/usr/bin", "A=1"}, "/workspace/sub", "/home/u/proj", "/img@sha256:00"
	r.Stdin, r.StdinBytes = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 4
	if a := ask(t, d, r); !a.Allow {
		t.Fatalf("%+v", a)
	}
	var in struct {
		Version int `json:"version"`
		Request
	}
	b, _ := os.ReadFile(dir + "/stdin")
	if err := json.Unmarshal(b, &in); err != nil || in.Version != 2 || in.ID != r.ID || !reflect.DeepEqual(in.Bound(), r.Bound()) || in.Justification != r.Justification {
		t.Fatalf("stdin %s: %+v, %v", b, in, err)
	}
	env, _ := os.ReadFile(dir + "/env")
	if bytes.Contains(env, []byte("hunter2")) || !bytes.Contains(env, []byte("PATH=/usr/local/bin:/usr/bin:/bin\n")) {
		t.Errorf("environment:\n%s", env)
	}
	if pwd, _ := os.ReadFile(dir + "/pwd"); string(pwd) != "/\n" {
		t.Errorf("working directory %q", pwd)
	}

	marker := filepath.Join(dir, "ran")
	for name, edit := range map[string]func(*Request){
		"argv": func(r *Request) { r.Argv = append(r.Argv, "\xff") },
		"env":  func(r *Request) { r.Env = append(r.Env, "A=\xff") },
		"cwd":  func(r *Request) { r.Cwd = "/workspace/\xfe" },
	} {
		bad := r
		edit(&bad)
		a := ask(t, &Decider{Argv: []string{script(t, "touch "+marker)}}, bad)
		if a.Allow || !strings.Contains(a.Reason, "not UTF-8") {
			t.Errorf("non-UTF-8 %s: %+v", name, a)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("non-UTF-8 %s: the decider ran on a request it cannot be shown exactly", name)
		}
	}
}

// TestDeciderLargeRequest: a decider that never reads its stdin still
// answers, however large the request.
func TestDeciderLargeRequest(t *testing.T) {
	r := sample()
	r.Argv = append(r.Argv, strings.Repeat("x", 1<<20))
	if a := ask(t, &Decider{Argv: []string{script(t, `echo '{"decision":"allow"}'`)}}, r); !a.Allow {
		t.Fatalf("%+v", a)
	}
}

// groupGone waits until no live process is left in process group pgid.
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		live := liveInGroup(pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left in the decider's group %d: %v", pgid, live)
		}
	}
}

func liveInGroup(pgid int) []int {
	var live []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:])) // state, ppid, pgrp, …
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			live = append(live, pid)
		}
	}
	return live
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return pid
		}
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// TestDeciderHangs: a decider that does not answer in time is killed,
// with everything it started, and the request denied.
func TestDeciderHangs(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	d := &Decider{Argv: []string{script(t, "echo $$ > "+pidFile+"; sleep 1000 & sleep 1000")}, Timeout: 300 * time.Millisecond}
	a := ask(t, d, sample())
	if a.Allow || a.Reason != "the decider did not answer within 300ms and was killed: deny" {
		t.Fatalf("%+v", a)
	}
	groupGone(t, readPID(t, pidFile))
}

// TestDeciderStragglers: what a decider leaves running when it answers is
// killed too, and the answer stands.
func TestDeciderStragglers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	d := &Decider{Argv: []string{script(t, "echo $$ > "+pidFile+`; sleep 1000 >/dev/null 2>&1 & echo '{"decision":"allow"}'`)}}
	if a := ask(t, d, sample()); !a.Allow {
		t.Fatalf("%+v", a)
	}
	groupGone(t, readPID(t, pidFile))
}

// TestDeciderFlood: a decider that writes 100 MB is killed as soon as it
// has written more than an answer can be, long before its timeout.
func TestDeciderFlood(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	d := &Decider{Argv: []string{script(t, "echo $$ > "+pidFile+"; head -c 100000000 /dev/zero")}, Timeout: MaxDeciderTimeout}
	a := ask(t, d, sample())
	if a.Allow || a.Reason != "the decider wrote more than 16384 bytes on stdout and was killed: deny" {
		t.Fatalf("%+v", a)
	}
	groupGone(t, readPID(t, pidFile))
}

// TestDeciderEscapedStdout: a process that left the decider's group and
// keeps its stdout open does not make the decider hang or count as an
// answer.
func TestDeciderEscapedStdout(t *testing.T) {
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("no setsid")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	d := &Decider{Argv: []string{script(t, `setsid sh -c 'echo $$ > `+pidFile+`; exec sleep 1000' & while [ ! -s `+pidFile+` ]; do sleep 0.01; done; echo '{"decision":"allow"}'`)}}
	a := ask(t, d, sample())
	pid := readPID(t, pidFile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if a.Allow || !strings.Contains(a.Reason, "left a process outside its group holding its stdout") {
		t.Fatalf("%+v", a)
	}
}

func TestDeciderContext(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	d := &Decider{Argv: []string{script(t, "echo $$ > "+pidFile+"; sleep 1000")}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { readPID(t, pidFile); cancel() }()
	if _, err := d.Approve(ctx, sample()); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
	groupGone(t, readPID(t, pidFile))
}
