package payload

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// The persistence payloads try to outlive their run: a double-forked
// daemon in a session of its own, a process that ignores SIGTERM, one
// left behind by a run that is then killed, and a move out of the run's
// cgroup. Every process they leave carries TOKEN in its command line, so
// the host can look for it after teardown.
func init() {
	Register("daemon", daemon)
	Register("daemon-mid", daemonMid)
	Register("ignore-term", ignoreTerm)
	Register("daemon-spin", daemonSpin)
	Register("cgroup-escape", cgroupEscape)
}

func signalIgnoreTerm() { signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT) }

// daemon TOKEN: fork a child that forks a grandchild in a new session and
// exits, so the grandchild is reparented: the classic daemon.
func daemon(args []string) int {
	if len(args) != 1 {
		return usage("daemon", "TOKEN")
	}
	if err := leaveDaemon(args[0]); err != nil {
		return broken("daemon", err)
	}
	return report(Report{Attempt: "daemon", Succeeded: false,
		Evidence: "left a double-forked, setsid daemon (" + args[0] + ") and exited"})
}

func leaveDaemon(token string) error {
	mid := self("daemon-mid", token)
	out, err := mid.CombinedOutput()
	if err != nil {
		return fmt.Errorf("the middle process failed: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// daemon-mid TOKEN: the middle of the double fork.
func daemonMid(args []string) int {
	if len(args) != 1 {
		return usage("daemon-mid", "TOKEN")
	}
	cmd := self("hold", args[0], "setsid", "ignore-term")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// ignore-term TOKEN: leave a child that ignores SIGTERM, SIGHUP and
// SIGINT, and exit without waiting for it.
func ignoreTerm(args []string) int {
	if len(args) != 1 {
		return usage("ignore-term", "TOKEN")
	}
	cmd := self("hold", args[0], "ignore-term")
	if err := cmd.Start(); err != nil {
		return broken("ignore-term", err)
	}
	time.Sleep(50 * time.Millisecond)
	return report(Report{Attempt: "ignore-term",
		Evidence: "left a child (" + args[0] + ") that ignores SIGTERM, and exited"})
}

// daemon-spin TOKEN: leave a daemon, then burn CPU until a cap kills the
// run: the daemon must die with it.
func daemonSpin(args []string) int {
	if len(args) != 1 {
		return usage("daemon-spin", "TOKEN")
	}
	if err := leaveDaemon(args[0]); err != nil {
		return broken("daemon-spin", err)
	}
	started("daemon-spin", "left a daemon ("+args[0]+"), now waiting for a cap to kill the run")
	time.Sleep(time.Hour)
	return 0
}

// cgroup-escape: move this process to the root of a cgroup hierarchy.
func cgroupEscape([]string) int {
	pid := []byte(fmt.Sprint(os.Getpid()))
	targets := []string{"/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/memory/cgroup.procs",
		"/sys/fs/cgroup/pids/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs"}
	r := Report{Attempt: "cgroup-escape", Detail: map[string]string{}}
	var seen []string
	for _, t := range targets {
		err := os.WriteFile(t, pid, 0)
		r.Detail[t] = okOr(errnoName(err))
		seen = append(seen, t+": "+okOr(errnoName(err)))
		if err == nil {
			r.Succeeded = true
		} else if r.Errno == "" {
			r.Errno = errnoName(err)
		}
	}
	r.Detail["procSelfCgroup"] = strings.TrimSpace(readSmall("/proc/self/cgroup"))
	r.Evidence = "moving to a root cgroup: " + strings.Join(seen, ", ") + "; /proc/self/cgroup: " + strings.ReplaceAll(r.Detail["procSelfCgroup"], "\n", " ")
	return report(r)
}
