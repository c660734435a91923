package limits

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// benchLayouts are the host's layout and, on a hybrid host, its v1 side
// alone.
func benchLayouts(b *testing.B) map[string]layout {
	testutil.RequireRoot(b)
	l, err := hostLayout()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]layout{string(l.mode): l}
	if l.mode == ModeHybrid {
		v1 := l
		v1.unified, v1.unifiedOwn = "", ""
		out["v1-only"] = v1
	}
	return out
}

// BenchmarkLifecycle times what a run costs in caps: New, start a process
// into the group (CLONE_INTO_CGROUP where there is a unified directory),
// Place, KillAll, reap, Delete. Its peer is BenchmarkPeerExecKill, the
// same process started and killed without any group.
func BenchmarkLifecycle(b *testing.B) {
	for name, l := range benchLayouts(b) {
		b.Run(name, func(b *testing.B) {
			caps := testCaps()
			var tNew, tPlace, tKill, tDelete time.Duration
			n := 0
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				g, err := newGroup(caps, Options{Name: fmt.Sprintf("bench%d-%d", os.Getpid(), i)}, &l)
				if err != nil {
					b.Fatal(err)
				}
				tNew += time.Since(t0)
				cmd := exec.Command("/bin/sleep", "100")
				if fd, ok := g.Dir(); ok {
					cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				t0 = time.Now()
				if err := g.Place(cmd.Process.Pid); err != nil {
					b.Fatal(err)
				}
				tPlace += time.Since(t0)
				t0 = time.Now()
				if err := g.KillAll(); err != nil {
					b.Fatal(err)
				}
				tKill += time.Since(t0)
				_ = cmd.Wait()
				t0 = time.Now()
				if err := g.Delete(); err != nil {
					b.Fatal(err)
				}
				tDelete += time.Since(t0)
				n++
			}
			for name, d := range map[string]time.Duration{"new": tNew, "place": tPlace, "killall": tKill, "delete": tDelete} {
				b.ReportMetric(float64(d.Microseconds())/float64(n), name+"-µs/op")
			}
		})
	}
}

// BenchmarkPeerExecKill is the peer of BenchmarkLifecycle: the process
// alone.
func BenchmarkPeerExecKill(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command("/bin/sleep", "100")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// BenchmarkNewDelete times New and Delete of an empty group; its peer is
// BenchmarkPeerContainerdNewDelete, containerd's cgroup1 making and
// deleting the same v1 directories with the same limits.
func BenchmarkNewDelete(b *testing.B) {
	for name, l := range benchLayouts(b) {
		b.Run(name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				g, err := newGroup(testCaps(), Options{Name: fmt.Sprintf("bench%d-%d", os.Getpid(), i)}, &l)
				if err != nil {
					b.Fatal(err)
				}
				if err := g.Delete(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPeerContainerdNewDelete(b *testing.B) {
	l := benchLayouts(b)["hybrid"]
	if len(l.v1) == 0 {
		b.Skip("no v1 hierarchies")
	}
	var subs []cgroup1.Subsystem
	for _, n := range v1Controllers {
		if s, ok := v1Subsystem(n, l.v1[n]); ok {
			subs = append(subs, s)
		}
	}
	caps := testCaps()
	res := &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &caps.MemoryBytes}, Pids: &specs.LinuxPids{Limit: &caps.Tasks}}
	for i := 0; b.Loop(); i++ {
		dir := fmt.Sprintf("airlock-bench%d-%d", os.Getpid(), i)
		p := func(n cgroup1.Name) (string, error) { return path.Join(l.v1Own[string(n)], dir), nil }
		cg, err := cgroup1.New(p, res, cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) { return subs, nil }))
		if err != nil {
			b.Fatal(err)
		}
		if err := cg.Delete(); err != nil {
			b.Fatal(err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(l.v1["memory"], l.v1Own["memory"], "airlock-bench*")); len(m) > 0 {
		b.Errorf("residue: %v", m)
	}
}

// BenchmarkWatchCheck times one tick of Watch: reading the counters.
func BenchmarkWatchCheck(b *testing.B) {
	for name, l := range benchLayouts(b) {
		b.Run(name, func(b *testing.B) {
			g := newTestGroup(b, testCaps(), &l)
			for b.Loop() {
				if k := g.check(); k != "" {
					b.Fatalf("check() = %q on an idle group", k)
				}
			}
		})
	}
}
