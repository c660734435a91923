package regress

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// update rewrites baseline.json with the ratios measured.
var update = flag.Bool("update", false, "write the measured ratios to baseline.json")

// margin is how much worse than its baseline a ratio may be before the
// check fails: generous, for a loaded two-core machine; a regression it
// is meant to catch is a lost optimisation (a millisecond or more of a
// few), not noise.
const margin = 1.6

// rounds of interleaved samples, and samples per command in each round.
const (
	rounds   = 5
	perRound = 8
)

// baseline is the file of committed ratios, each the median over rounds
// of a row's lower quartile in a round over bwrap's in the same round:
// the machine's load only ever adds time, so a low quantile moves less
// with it than the median does.
type baseline map[string]float64

// The rows: how each is timed.
const (
	rowRun         = "airlock-run"  // airlock run -- /bin/true, cold, audit log on disk
	rowSessionExec = "session-exec" // airlock session exec ID -- /bin/true
	rowLibraryStep = "library-step" // enforcer.Session.Exec (bench/session)
	rowPoolOpen    = "pool-open"    // Pool.OpenSession (bench/session)
	rowMCPCall     = "mcp-stdio"    // an MCP tool call in a live session (bench/mcp)
	rowMCPFirst    = "first-pool"   // a new MCP session's first call, from a pool (bench/mcp)
)

const policyJSON = `{
  "toolScopes": {"bench": {"allow": [{"name": "true", "command": "/bin/true", "argPatterns": [], "allowExtraArgs": false}]}},
  "egress": {"default": "deny", "taskAllowlist": {}}
}`

// TestRatios times, in rounds, bwrap --unshare-all, airlock run, airlock
// session exec, (bench/session's program) a library step and a pool's
// session opening, and (bench/mcp's) an MCP tool call in a live session
// and a new MCP session's first call from a pool, each round's rows one after another so that a
// change in the machine's load falls on all of them; it compares each
// row's median ratio to the same round's bwrap with baseline.json, and
// fails when one is more than margin times its baseline, twice in a row.
func TestRatios(t *testing.T) {
	testutil.RequireRoot(t)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed: there is no peer to time airlock against (.ci/run installs bubblewrap)")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build airlock with")
	}
	base := readBaseline(t)
	env := newBench(t, bwrap)
	got := env.measure(t)
	if *update {
		writeBaseline(t, got)
		return
	}
	if worse := compare(t, base, got); len(worse) > 0 {
		t.Logf("worse than the baseline: %s; measuring again", strings.Join(worse, ", "))
		got = env.measure(t)
		if worse := compare(t, base, got); len(worse) > 0 {
			t.Fatalf("worse than the baseline by more than %gx, twice: %s (bench/regress/baseline.json; docs/sandbox.md, \"Speed\")", margin, strings.Join(worse, ", "))
		}
	}
}

// compare logs each row and returns those over margin times their
// baseline.
func compare(t *testing.T, base, got baseline) []string {
	var worse []string
	for _, row := range slices.Sorted(maps.Keys(got)) {
		b, ok := base[row]
		t.Logf("%-13s %.2fx bwrap (baseline %.2fx)", row, got[row], b)
		if ok && got[row] > b*margin {
			worse = append(worse, fmt.Sprintf("%s %.2fx > %.2fx × %g", row, got[row], b, margin))
		}
	}
	return worse
}

// bench is what the rows need: the binaries built, a policy, an audit log
// and a live session.
type bench struct {
	dir, airlock, sessionBench, mcpBench, bwrap string
	policy, audit, session                      string
	env                                         []string
}

func newBench(t *testing.T, bwrap string) *bench {
	t.Helper()
	dir := t.TempDir()
	b := &bench{dir: dir, bwrap: bwrap, airlock: filepath.Join(dir, "airlock"), sessionBench: filepath.Join(dir, "session-bench"),
		mcpBench: filepath.Join(dir, "mcp-bench"),
		policy:   filepath.Join(dir, "policy.json"), audit: filepath.Join(dir, "state", "audit.jsonl")}
	// airlock-init beside them all, as installed (docs/sandbox.md, "The
	// small init"), all static.
	for pkg, out := range map[string]string{"../../cmd/airlock": b.airlock, "../../cmd/airlock-init": filepath.Join(dir, "airlock-init"),
		"../session": b.sessionBench, "../mcp": b.mcpBench} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as the README installs it
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	if err := os.WriteFile(b.policy, []byte(policyJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A signing key of the test's own, as a user's is on the same disk.
	b.env = append(os.Environ(), "XDG_RUNTIME_DIR="+run, "XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"AIRLOCK_AUDIT_KEY="+filepath.Join(dir, "state", "key"), "AIRLOCK_POLICY=")
	out, err := b.cmd("--policy", b.policy, "session", "start", "--audit", b.audit).Output()
	if err != nil {
		t.Fatalf("session start: %v", err)
	}
	b.session = strings.TrimSpace(string(out))
	t.Cleanup(func() {
		b.cmd("session", "stop", b.session).Run()
		testutil.CheckNoSandboxLeft(t, b.session)
	})
	return b
}

func (b *bench) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(b.airlock, args...)
	cmd.Env = b.env
	return cmd
}

// measure returns each row's ratio (see baseline).
func (b *bench) measure(t *testing.T) baseline {
	t.Helper()
	procs := []struct {
		row  string
		argv []string
	}{
		{"bwrap", []string{b.bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "/bin/true"}},
		{rowRun, []string{b.airlock, "run", "--policy", b.policy, "--tool", "bench", "--audit", b.audit, "--", "/bin/true"}},
		{rowSessionExec, []string{b.airlock, "session", "exec", b.session, "--tool", "bench", "--", "/bin/true"}},
	}
	ratios := map[string][]float64{}
	for r := range rounds {
		med := map[string]float64{}
		for i, p := range procs {
			if r%2 == 1 { // every other round in reverse order, as bench/*/run.sh
				p = procs[len(procs)-1-i]
			}
			med[p.row] = b.timeProc(t, p.argv)
		}
		for row, ms := range b.library(t) {
			med[row] = ms
		}
		for row, ms := range med {
			if row != "bwrap" {
				ratios[row] = append(ratios[row], ms/med["bwrap"])
			}
		}
	}
	got := baseline{}
	for row, rs := range ratios {
		got[row] = median(rs)
	}
	return got
}

// timeProc runs argv perRound times (after one untimed run) and returns
// the lower quartile of its wall times in milliseconds.
func (b *bench) timeProc(t *testing.T, argv []string) float64 {
	t.Helper()
	var ms []float64
	for i := range perRound + 1 {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = b.env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
		if i > 0 {
			ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		}
	}
	return lowQuartile(ms)
}

// library runs bench/session's program for one round: its library-step
// and pool-open lower quartiles in milliseconds; then bench/mcp's: its
// mcp-stdio and first-pool ones.
func (b *bench) library(t *testing.T) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	n := strconv.Itoa(4 * perRound)
	b.rows(t, got, exec.Command(b.sessionBench, b.policy, filepath.Join(b.dir, "state", "lib.jsonl"), n), rowLibraryStep, rowPoolOpen)
	b.rows(t, got, exec.Command(b.mcpBench, b.airlock, b.policy, filepath.Join(b.dir, "state", "mcp.jsonl"), n), rowMCPCall, rowMCPFirst)
	return got
}

// rows runs one of the benchmark programs and puts the lower quartile of
// each of its rows named in got.
func (b *bench) rows(t *testing.T, got map[string]float64, cmd *exec.Cmd, rows ...string) {
	t.Helper()
	cmd.Env = b.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(cmd.Path), err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && slices.Contains(rows, f[0]) {
			v, err := strconv.ParseFloat(f[3], 64)
			if err != nil {
				t.Fatalf("%s: %q", filepath.Base(cmd.Path), sc.Text())
			}
			got[f[0]] = v
		}
	}
	for _, row := range rows {
		if _, ok := got[row]; !ok {
			t.Fatalf("%s printed no %s row: %s", filepath.Base(cmd.Path), row, out)
		}
	}
}

// lowQuartile is v's 25th percentile (the lower of the two around it).
func lowQuartile(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[(len(s)-1)/4]
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func readBaseline(t *testing.T) baseline {
	t.Helper()
	b, err := os.ReadFile("baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	var base baseline
	if err := json.Unmarshal(b, &base); err != nil {
		t.Fatalf("baseline.json: %v", err)
	}
	for _, row := range []string{rowRun, rowSessionExec, rowLibraryStep, rowPoolOpen, rowMCPCall, rowMCPFirst} {
		if base[row] <= 0 {
			t.Fatalf("baseline.json has no ratio for %s", row)
		}
	}
	return base
}

func writeBaseline(t *testing.T, got baseline) {
	t.Helper()
	for k, v := range got {
		got[k] = float64(int(v*100+0.5)) / 100
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("baseline.json", append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
