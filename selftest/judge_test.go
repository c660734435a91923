package selftest

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/payload"
)

// ranWith is the observation of an allowed run whose payload reported reps.
func ranWith(reps ...payload.Report) *observation {
	return &observation{res: enforcer.Result{Decision: decision.Allow}, reports: reps}
}

func rep(errno string, succeeded bool, detail ...string) payload.Report {
	r := payload.Report{Attempt: "x", Succeeded: succeeded, Errno: errno, Evidence: "the payload's words", Detail: map[string]string{}}
	for i := 0; i+1 < len(detail); i += 2 {
		r.Detail[detail[i]] = detail[i+1]
	}
	return r
}

func receiptSays(o *observation, k, v string) *observation {
	o.res.Receipt = map[string]string{k: v}
	return o
}

func killed(cap string) *observation {
	o := ranWith(rep("", false))
	o.res.KilledBy, o.res.ExitCode = &cap, 137
	return o
}

func egressEvent(verdict, reason string) audit.Event {
	return audit.Event{Seq: 7, Kind: audit.KindEgress, Decision: verdict, Reason: reason}
}

// judgeCases is the classification table: every judge, every way an
// attempt can end, and the outcome and evidence it must get.
var judgeCases = []struct {
	name  string
	judge func(*observation) verdict
	obs   *observation
	want  Outcome
	says  string // substring of the evidence
}{
	{"errno: the expected errno", errnoIs("EACCES"), ranWith(rep("EACCES", false)), Contained, "EACCES: the payload's words"},
	{"errno: one of the expected", errnoIs("EROFS", "ETXTBSY"), ranWith(rep("ETXTBSY", false)), Contained, "ETXTBSY"},
	{"errno: an unexpected errno is broken", errnoIs("EACCES"), ranWith(rep("EPERM", false)), Broken, "unexpected EPERM (want EACCES)"},
	{"errno: refused without errno is broken", errnoIs("EACCES"), ranWith(rep("", false)), Broken, "without an errno"},
	{"errno: got through", errnoIs("EACCES"), ranWith(rep("", true)), Escaped, "the payload's words"},
	{"errno: the last report counts", errnoIs("EACCES"), ranWith(rep("EPERM", false), rep("EACCES", false)), Contained, "EACCES"},
	{"errno: nothing reported", errnoIs("EACCES"), &observation{res: enforcer.Result{Decision: decision.Allow, ExitCode: 2}, stderr: "panic: boom"}, Broken, "reported nothing (exit 2, signal 0): panic: boom"},
	{"errno: airlock could not run it", errnoIs("EACCES"), &observation{res: enforcer.Result{ExitCode: enforcer.ExitSetup}, err: errors.New("no userns")}, Broken, "could not run the payload: no userns"},
	{"errno: the gate refused the payload", errnoIs("EACCES"), &observation{res: enforcer.Result{Decision: decision.Deny, Reason: "nope", ExitCode: 77}}, Broken, "refused the payload itself: nope"},
	{"errno: teardown error", errnoIs("EACCES"), &observation{res: enforcer.Result{Decision: decision.Allow}, err: errors.New("remove the group"), reports: []payload.Report{rep("EACCES", false)}}, Broken, "remove the group"},
	{"errno: the payload could not attempt", errnoIs("EACCES"), ranWith(rep("ENOENT", false, "broken", "true")), Broken, "could not make its attempt"},

	{"filter: errno and probe agree", filtered("EPERM"), ranWith(rep("EPERM", false, "probe", "EPERM", "probeKernel", "EINVAL")), Contained, "its probe got EPERM too; the kernel answers EINVAL"},
	{"filter: the kernel answered the probe", filtered("EPERM"), ranWith(rep("EPERM", false, "probe", "EINVAL", "probeKernel", "EINVAL")), Broken, "the filter did not answer this call"},
	{"filter: the probe succeeded", filtered("EPERM"), ranWith(rep("EPERM", false, "probe", "", "probeKernel", "EINVAL")), Broken, "the probe got no error"},
	{"filter: the kernel would allow", filtered("EPERM"), ranWith(rep("EPERM", false, "kernelWould", "allow")), Contained, "the kernel would allow"},
	{"filter: EACCES is not the filter's", filtered("EPERM"), ranWith(rep("EACCES", false, "probe", "EPERM")), Broken, "unexpected EACCES"},
	{"filter: ENOSYS wanted, EPERM got", filtered("ENOSYS"), ranWith(rep("EPERM", false)), Broken, "unexpected EPERM (want ENOSYS)"},
	{"filter: got through", filtered("EPERM"), ranWith(rep("", true, "probe", "EINVAL")), Escaped, "the payload's words"},

	{"cap: the expected cap", killedBy("memory"), killed("memory"), Contained, "killedBy memory"},
	{"cap: another cap", killedBy("memory"), killed("wall"), Broken, "killed by the wall cap, not memory"},
	{"cap: no cap before the battery's deadline", killedBy("memory"), &observation{res: enforcer.Result{Decision: decision.Allow, Signal: 9}, timedOut: true}, Escaped, "the battery's own deadline"},
	{"cap: the bomb completed", killedBy("pids"), ranWith(rep("", true)), Escaped, "the payload's words"},
	{"cap: exited by itself", killedBy("cpu"), ranWith(rep("", false)), Broken, "no cap killed it"},
	{"cap: never ran", killedBy("cpu"), &observation{res: enforcer.Result{ExitCode: enforcer.ExitSetup}, err: errors.New("setup")}, Broken, "could not run"},

	{"egress: denied, refused over HTTP", egressRefused(whyBlocked), &observation{res: enforcer.Result{Decision: decision.Allow},
		reports: []payload.Report{rep("", false, "status", "403", "reason", "is always blocked")},
		events:  []audit.Event{egressEvent(audit.DecisionDeny, `host "169.254.169.254:80" is always blocked`)}}, Contained, "audit seq 7"},
	{"egress: denied, refused over SOCKS5", egressRefused(whyBlocked), &observation{res: enforcer.Result{Decision: decision.Allow},
		reports: []payload.Report{rep("", false, "reply", "2")},
		events:  []audit.Event{egressEvent(audit.DecisionDeny, "is always blocked")}}, Contained, "SOCKS5 reply 2"},
	{"egress: the proxy dialled off loopback", egressRefused(whyBlocked), &observation{res: enforcer.Result{Decision: decision.Allow},
		reports: []payload.Report{rep("", false, "status", "502", "reason", "dial refused")}, dials: []string{"169.254.169.254:80"},
		events: []audit.Event{egressEvent(audit.DecisionAllow, "allowed")}}, Escaped, "let the proxy dial 169.254.169.254:80"},
	{"egress: the gate allowed it", egressRefused(whyBlocked), &observation{res: enforcer.Result{Decision: decision.Allow},
		reports: []payload.Report{rep("", false, "status", "502", "reason", "failed")},
		events:  []audit.Event{egressEvent(audit.DecisionAllow, "allowed by allowlist entry")}}, Escaped, "the egress gate allowed it"},
	{"egress: upstream answered", egressRefused(whyBlocked), &observation{res: enforcer.Result{Decision: decision.Allow},
		reports: []payload.Report{rep("", true, "status", "200")}}, Escaped, "the payload's words"},
	{"egress: no decision recorded", egressRefused(whyBlocked), ranWith(rep("ECONNREFUSED", false)), Broken, "recorded no egress decision"},
	{"egress: denied for another reason", egressRefused(whyBlocked), &observation{res: enforcer.Result{Decision: decision.Allow},
		reports: []payload.Report{rep("", false, "status", "403", "reason", "x")},
		events:  []audit.Event{egressEvent(audit.DecisionDeny, "denied by default")}}, Broken, "denied for another reason"},
	{"egress: no refusal seen by the payload", egressRefused(whyBlocked), &observation{res: enforcer.Result{Decision: decision.Allow},
		reports: []payload.Report{rep("", false, "status", "400")},
		events:  []audit.Event{egressEvent(audit.DecisionDeny, "is always blocked")}}, Broken, "saw no refusal"},

	{"gate: denied", gateRefused(decision.Deny, whyNoScope), &observation{res: enforcer.Result{Decision: decision.Deny, ExitCode: 77, Reason: `no scope for tool "t": deny by default`},
		events: []audit.Event{{Kind: audit.KindCommand}}}, Contained, "exit 77, no sandbox launched"},
	{"gate: escalated", gateRefused(decision.Escalate, whyEscalate), &observation{res: enforcer.Result{Decision: decision.Escalate, ExitCode: 75, Reason: "x: needs human approval"},
		events: []audit.Event{{Kind: audit.KindCommand}}}, Contained, "escalate"},
	{"gate: escalated, exit of a denial", gateRefused(decision.Escalate, whyEscalate), &observation{res: enforcer.Result{Decision: decision.Escalate, ExitCode: 77, Reason: "x: needs human approval"},
		events: []audit.Event{{Kind: audit.KindCommand}}}, Broken, "exit 77, want 75"},
	{"gate: allowed", gateRefused(decision.Deny, whyNoScope), &observation{res: enforcer.Result{Decision: decision.Allow, Reason: "matched allow rule"}}, Escaped, "the command gate allowed it"},
	{"gate: a sandbox was launched", gateRefused(decision.Deny, whyNoScope), &observation{res: enforcer.Result{Decision: decision.Deny, ExitCode: 77},
		events: []audit.Event{{Kind: audit.KindLifecycle, Context: audit.Context{Event: audit.EventSandboxLaunched}}}}, Escaped, "a sandbox was launched"},
	{"gate: escalate instead of deny", gateRefused(decision.Deny, whyNoScope), &observation{res: enforcer.Result{Decision: decision.Escalate, ExitCode: 77}}, Broken, "decision escalate, want deny"},
	{"gate: the reason does not say why", gateRefused(decision.Deny, whyNoScope), &observation{res: enforcer.Result{Decision: decision.Deny, ExitCode: 77, Reason: "denied"},
		events: []audit.Event{{Kind: audit.KindCommand}}}, Broken, "does not say"},
	{"gate: not audited", gateRefused(decision.Deny, whyNoScope), &observation{res: enforcer.Result{Decision: decision.Deny, ExitCode: 77, Reason: "no scope for tool"}}, Broken, "not in the audit stream"},

	{"foreign: killed by SIGSYS", judgeForeign, ranWith(rep("", false, "signal", "SIGSYS")), Contained, "SIGSYS"},
	{"foreign: ENOSYS from the kernel", judgeForeign, ranWith(rep("ENOSYS", false)), Broken, "not killed by SIGSYS"},
	{"foreign: the call returned", judgeForeign, ranWith(rep("", true)), Escaped, "the payload's words"},

	{"at most: refused under the cap", atMost("mib", 4, "ENOSPC"), ranWith(rep("ENOSPC", false, "mib", "4")), Contained, "ENOSPC after 4 (cap 4)"},
	{"at most: over the cap", atMost("mib", 4, "ENOSPC"), ranWith(rep("ENOSPC", false, "mib", "9")), Escaped, "over the cap"},
	{"at most: no count", atMost("mib", 4, "ENOSPC"), ranWith(rep("ENOSPC", false)), Broken, "did not report its mib"},

	{"observation: nothing found", notSucceeded, ranWith(rep("", false)), Contained, "the payload's words"},
	{"observation: a way out", notSucceeded, ranWith(rep("", true)), Escaped, "the payload's words"},
	{"detail: as wanted", detailIs("CapBnd", "0", errnoIs("EPERM")), ranWith(rep("EPERM", false, "CapBnd", "0")), Contained, "EPERM"},
	{"detail: not as wanted", detailIs("CapBnd", "0", errnoIs("EPERM")), ranWith(rep("EPERM", false, "CapBnd", "1")), Broken, `CapBnd is "1"`},
	{"secret: read", notSecret("s3cret", errnoIs("ENOENT")), ranWith(rep("", true, "head", "xx s3cret xx")), Escaped, "canary secret"},
	{"setuid: host binary held", judgeSetuid(true), ranWith(rep("", false, "euids", "65534", "setuidBit", "true", "noNewPrivs", "1", "mountOptions", "ro,nosuid")), Contained, "the payload's words"},
	{"setuid: host binary, no sample", judgeSetuid(true), ranWith(rep("", false, "setuidBit", "true", "noNewPrivs", "1")), Broken, "before its uid could be sampled"},
	{"setuid: mount not nosuid", judgeSetuid(true), ranWith(rep("", false, "euids", "65534", "setuidBit", "true", "noNewPrivs", "1", "mountOptions", "ro")), Broken, "not nosuid"},
	{"setuid: copy kept its bit", judgeSetuid(false), ranWith(rep("", false, "setuidBit", "true", "output", "uid=65534")), Broken, "kept its setuid bit"},
	{"sysv: refused", judgeSysVIPC, ranWith(rep("", false, "shm_touch_stop", "ENOSYS", "msg_stop", "ENOSYS", "sem_stop", "ENOSYS")), Contained, "refused"},
	{"sysv: limits held", judgeSysVIPC, ranWith(rep("", false, "shm_kept", "0", "shm_segments", "64", "msg_queues", "16", "msg_bytes", "262144", "sem_sets", "16")), Contained, "shm_kept 0"},
	{"sysv: kept", judgeSysVIPC, ranWith(rep("", false, "shm_kept", "64", "shm_segments", "4032", "msg_queues", "32000", "msg_bytes", "524288000", "sem_sets", "32000")), Escaped, "msg_bytes 524288000"},
	{"udp or: refused by the third filter", udpOr(errnoIs("ECONNREFUSED")), receiptSays(ranWith(rep("EACCES", false)), "seccomp", "x; third filter (no memory cgroup): SysV IPC and UDP sockets refused"), Contained, "no-memory-cgroup filter"},
	{"udp or: EACCES without the third filter", udpOr(errnoIs("ECONNREFUSED")), ranWith(rep("EACCES", false)), Broken, "unexpected EACCES"},
	{"udp: refused", judgeUDPPin, ranWith(rep("", false, "sockets", "0", "stop", "EACCES")), Contained, "refused"},
	{"udp: within", judgeUDPPin, ranWith(rep("", false, "sockets", "123", "held_bytes", "16728800")), Contained, "held_bytes"},
	{"udp: a gigabyte", judgeUDPPin, ranWith(rep("", false, "sockets", "123", "held_bytes", "1024274432")), Escaped, "over the bound"},
	{"counts: no report", judgeCounts(map[string]int{"queued": 1024}), ranWith(rep("", false)), Broken, "did not report"},
	{"setuid: root", judgeSetuid(false), ranWith(rep("", true, "output", "uid=65534 euid=0")), Escaped, "euid=0"},
}

func TestJudges(t *testing.T) {
	for _, c := range judgeCases {
		t.Run(c.name, func(t *testing.T) {
			v := c.judge(c.obs)
			if v.outcome != c.want || !strings.Contains(v.evidence, c.says) {
				t.Errorf("got %s %q, want %s with %q", v.outcome, v.evidence, c.want, c.says)
			}
		})
	}
}

func TestWithCanary(t *testing.T) {
	c := &canary{addr: "127.0.0.1:9"}
	j := withCanary(c, errnoIs("EACCES"))
	if v := j(ranWith(rep("EACCES", false))); v.outcome != Contained || !strings.Contains(v.evidence, "received nothing") {
		t.Errorf("silent canary: %s %q", v.outcome, v.evidence)
	}
	c.hits.Add(1)
	if v := j(ranWith(rep("EACCES", false))); v.outcome != Escaped || !strings.Contains(v.evidence, "received 1") {
		t.Errorf("a canary that was reached must make an escape whatever the payload says: %s %q", v.outcome, v.evidence)
	}
}

func TestCgroupSkip(t *testing.T) {
	noCgroup := map[string]string{limits.ControlMemory: "RLIMIT_DATA per process (no memory cgroup: kernel memory, such as TCP socket buffers between the sandbox's own sockets, is counted by nothing)",
		limits.NoteCgroupUnavailable: "permission denied"}
	if why, skip := cgroupSkip(limits.RequireCgroupMemory, noCgroup); !skip || !strings.Contains(why, "no cgroup delegation") || !strings.Contains(why, "permission denied") {
		t.Errorf("a receipt without a memory cgroup must skip, quoting itself: %v %q", skip, why)
	}
	withCgroup := map[string]string{limits.ControlMemory: "cgroup v1 memory.limit_in_bytes"}
	if _, skip := cgroupSkip(limits.RequireCgroupMemory, withCgroup); skip {
		t.Error("a receipt with a memory cgroup must not skip")
	}
	silent := map[string]string{limits.ControlMemory: "RLIMIT_DATA per process (no memory cgroup: kernel memory, such as TCP socket buffers between the sandbox's own sockets, is counted by nothing)"}
	if _, skip := cgroupSkip(limits.RequireCgroupMemory, silent); skip {
		t.Error("a receipt that does not say the cgroup is unavailable must not skip: the attempt runs and is judged")
	}
	if _, skip := cgroupSkip(limits.RequireCgroupMemory, nil); skip {
		t.Error("no receipt must not skip")
	}
}

func TestSummarize(t *testing.T) {
	ok := Result{Outcome: Contained}
	for _, c := range []struct {
		name string
		rep  Report
		want bool
	}{
		{"all contained", Report{Attempts: []Result{ok, ok}, Residue: Residue{Clean: true}}, true},
		{"a receipt skip", Report{Attempts: []Result{ok, {Outcome: Skipped}}, Residue: Residue{Clean: true}}, true},
		{"an escape", Report{Attempts: []Result{ok, {Outcome: Escaped}}, Residue: Residue{Clean: true}}, false},
		{"a broken attempt", Report{Attempts: []Result{ok, {Outcome: Broken}}, Residue: Residue{Clean: true}}, false},
		{"residue", Report{Attempts: []Result{ok}}, false},
		{"no attempt", Report{Residue: Residue{Clean: true}}, false},
		{"a failed preflight", Report{Attempts: []Result{ok}, Residue: Residue{Clean: true}, Preflight: []Result{{Outcome: Broken}}}, false},
	} {
		c.rep.summarize()
		if c.rep.OK != c.want {
			t.Errorf("%s: OK %v, want %v (%s)", c.name, c.rep.OK, c.want, c.rep.Line())
		}
	}
}

// TestBattery checks the battery's shape: at least 60 attempts, every
// family present, unique names, and a control and description for each.
func TestBattery(t *testing.T) {
	all, err := attempts(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 60 {
		t.Errorf("the battery has %d attempts, want at least 60", len(all))
	}
	seen := map[string]bool{}
	perFamily := map[Family]int{}
	for _, a := range all {
		if seen[a.id()] {
			t.Errorf("duplicate attempt %s", a.id())
		}
		seen[a.id()] = true
		perFamily[a.family]++
		if a.control == "" || a.what == "" || a.plan == nil {
			t.Errorf("%s lacks a control, a description or a plan", a.id())
		}
		if a.family == FamilyCommand && a.sandboxed {
			t.Errorf("%s: command-gate attempts are decisions and must not need a sandbox", a.id())
		}
	}
	for _, f := range Families {
		if perFamily[f] == 0 {
			t.Errorf("family %s has no attempt", f)
		}
	}
	if _, err := attempts([]Family{"nope"}); err == nil {
		t.Error("an unknown family must be an error")
	}
	total := 0
	for _, n := range Count() {
		total += n
	}
	if total != len(all) {
		t.Errorf("Count adds up to %d, the battery has %d", total, len(all))
	}
	some, _ := attempts([]Family{FamilyCommand})
	if len(some) != perFamily[FamilyCommand] {
		t.Errorf("--family command gave %d attempts, want %d", len(some), perFamily[FamilyCommand])
	}
}

func TestPolicyLoads(t *testing.T) {
	pol, err := Policy()
	if err != nil {
		t.Fatal(err)
	}
	if c := pol.CapsFor(toolDisk); c.DiskWriteMB != capDiskMiB {
		t.Errorf("disk cap of %s is %d, the judges assume %d", toolDisk, c.DiskWriteMB, capDiskMiB)
	}
	if c := pol.CapsFor(toolFDs); c.OpenFiles != capOpenFiles {
		t.Errorf("open-files cap of %s is %d, the judges assume %d", toolFDs, c.OpenFiles, capOpenFiles)
	}
	if c := pol.CapsFor(toolOutput); c.OutputMB != capOutputMiB {
		t.Errorf("output cap of %s is %d, the judges assume %d", toolOutput, c.OutputMB, capOutputMiB)
	}
	if c := pol.CapsFor(toolPayload); c.MemoryMB != capMemoryMiB {
		t.Errorf("memory cap of %s is %d, the judges assume %d", toolPayload, c.MemoryMB, capMemoryMiB)
	}
}
