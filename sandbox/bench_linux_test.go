package sandbox

import (
	"context"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// BenchmarkStartReleaseWait is one whole sandboxed run of /bin/true with
// every control (all namespaces, cgroup, seccomp, Landlock, the proxy
// listener, the start-up probes): Start, Release, Wait. Compare it with
// bench/sandbox/run.sh, which times the airlock command beside bwrap.
func BenchmarkStartReleaseWait(b *testing.B) {
	testutil.RequireRoot(b)
	cfg := Config{Path: "/bin/true", Caps: testCaps(), Proxy: true, Probes: &ProbeRequest{}}
	if !seccompAvailable() {
		cfg.Probes = nil
	}
	for b.Loop() {
		s, err := Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(); err != nil {
			s.Kill()
			b.Fatal(err)
		}
		res, err := s.Wait()
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("result %+v, %v", res, err)
		}
	}
}

// BenchmarkSessionExec is one step of /bin/true in a running session:
// what a command costs once its sandbox exists.
func BenchmarkSessionExec(b *testing.B) {
	testutil.RequireRoot(b)
	ss, err := StartSession(context.Background(), Config{Caps: testCaps(), Proxy: true})
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	for b.Loop() {
		res, err := ss.Exec(context.Background(), Step{Path: "/bin/true"})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("result %+v, %v", res, err)
		}
	}
}
