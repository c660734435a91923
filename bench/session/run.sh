#!/usr/bin/env bash
# Times one command in a live session beside a fresh sandbox and the
# peers, and prints each median's ratio to bwrap's and to `airlock run`'s.
# Goals (issue 15): a step through the library <= 0.3x bwrap at the
# median and <= 1x at p99; `airlock session exec` <= 0.6x; a session from
# the pool <= 0.5x.
#
# Rows (hyperfine, ROUNDS rounds, every other round in reverse order, as
# bench/sandbox/run.sh does):
#   session-exec    airlock session exec ID --tool bench -- /bin/true: the
#                   client process, one round trip to the holder, the
#                   decision and its synced audit record, the step in the
#                   session's sandbox
#   airlock-run     airlock run --tool bench -- /bin/true: a fresh sandbox
#   airlock-help    airlock --help: the command's own start alone
#   bwrap, direct   the peers
# and, in a hyperfine run of their own after the rounds (each run after
# the previous run's session is stopped, untimed): start-pool, airlock
# session start --pool from a session pool of 2 (airlock session pool),
# and start, airlock session start with a holder of its own.
# and, from bench/session (not hyperfine: in one process, after the
# hyperfine rounds): library-step, enforcer.Session.Exec alone, RUNS
# steps; pool-open, a session opened on a sandbox a Pool built ahead
# (Pool.OpenSession until it is ready for its first command), and
# cold-open, one opened with Enforcer.OpenSession, RUNS/4 times each;
# sandbox-step, sandbox.Session.Exec alone (no gate, no audit record);
# and floor-step, the floor under a step whose decision is durable before
# it runs: a 600-byte line written beside the library's audit log and
# fdatasync'd, then /bin/true run, nothing else. Their ratios are to the
# same run's bwrap median. floor-sandbox-step (bench/floor -steps, after
# them) is the floor under a step in a sandbox: the smallest program that
# does a session step's work (a sandbox built once as bench/floor's, then
# per step the decision synced, one message to the init and one back, the
# step forked in a cgroup of its own inside the sandbox's, its peak and
# CPU read, the outcome appended). floor-cli (in the hyperfine rounds) is
# the floor under session-exec: bench/floor/client, a small Go program
# that asks bench/floor -serve (the same sandbox and steps, one per
# connection) for one step over a unix socket and exits with its status.
# go-start is a small Go program's start alone.
#
# The audit log is on the disk the default audit path is on, as a user's
# is; it grows by one step's records each run (the session's), so that
# row is not reset between runs.
#
# Usage: bench/session/run.sh [RUNS] [ROUNDS]   (as root; RUNS per command
# in all, default 200; ROUNDS default 5). SPACED=1 pauses 200 ms before
# each timed run and step, as an agent's calls come, a model's turn apart:
# the host is then idle between them, and every thread wakeup costs more
# (a library step 1.8 ms back to back, 3.7 ms after 200 ms idle; bwrap 3.6
# against 5.2 ms). Installs hyperfine and
# bubblewrap with apt-get when missing.
set -euo pipefail
runs=${1:-200}
rounds=${2:-5}
cd "$(dirname "$0")/../.."
. bench/lib.sh
need_peers
out=$(mktemp -d)
state=$(state_dir)
audit="$state/bench-session-audit-$$.jsonl"
libaudit="$state/bench-session-lib-$$.jsonl"
floorstate="$state/bench-session-floor-$$"
mkdir -m 700 "$floorstate"
trap 'rm -rf "$out" "$audit"* "$libaudit"* "$floorstate"' EXIT
export XDG_RUNTIME_DIR="$out/run"
mkdir -m 700 "$XDG_RUNTIME_DIR"
go build -o "$out/airlock" ./cmd/airlock
go build -o "$out/session-bench" ./bench/session
go build -o "$out/go-start" ./bench/gostart
go build -trimpath -ldflags='-s -w' -o "$out/floor" ./bench/floor
go build -trimpath -ldflags='-s -w' -o "$out/floor-client" ./bench/floor/client
true_policy "$out/policy.json"
a="$out/airlock"
id=$("$a" --policy "$out/policy.json" session start --audit "$audit")
"$a" --policy "$out/policy.json" session pool --size 2 --audit "$audit"
# The floor's server, its stdin held open on fd 9 until the rounds end.
mkfifo "$out/floor-in"
"$out/floor" -serve "$out/floor.sock" -cgroup -state "$floorstate" -seccomp -landlock -- /bin/true <"$out/floor-in" >"$out/floor-serve.out" 2>&1 &
floorpid=$!
exec 9>"$out/floor-in"
trap 'exec 9>&-; wait "$floorpid" 2>/dev/null || true; "$a" session stop "$id" >/dev/null 2>&1 || true; "$a" session pool --stop >/dev/null 2>&1 || true; rm -rf "$out" "$audit"* "$libaudit"* "$floorstate"' EXIT
for _ in $(seq 100); do
	grep -q '^ready$' "$out/floor-serve.out" && break
	sleep 0.05
done
"$a" session exec "$id" --tool bench -- /bin/true # fails loudly if it cannot run
"$out/floor-client" "$out/floor.sock" # and the floor's
spaced=()
if [[ "${SPACED:-}" == 1 ]]; then
	spaced=(--prepare "sleep 0.2")
	export SESSION_BENCH_GAP=200ms
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
per=$(((runs + rounds - 1) / rounds))
rows=(
	session-exec "$a session exec $id --tool bench -- /bin/true"
	airlock-run "$a run --policy $out/policy.json --tool bench --audit $audit -- /bin/true"
	airlock-help "$a --help"
	bwrap 'bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true'
	direct '/bin/true'
	go-start "$out/go-start"
	floor-cli "$out/floor-client $out/floor.sock"
)
run_rounds "$out" "$rounds" "$per" "${spaced[@]}"
stopped="sh -c '$a session stop ses-bench-start >/dev/null 2>&1; sleep 0.02; true'" # and the pool refills
hyperfine -N --style none --runs "$per" --export-json "$out/starts.json" \
	--prepare "$stopped" -n start-pool "$a --policy $out/policy.json session start --pool --id ses-bench-start" \
	--prepare "$stopped" -n start "$a --policy $out/policy.json session start --audit $audit --id ses-bench-start" >/dev/null
"$a" session stop ses-bench-start >/dev/null 2>&1 || true
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
exec 9>&- # the floor's server ends
wait "$floorpid"
lib=$("$out/session-bench" "$out/policy.json" "$libaudit" "$runs")
lib+=$'\n'$("$out/floor" -steps "$runs" -cgroup -state "$floorstate" -seccomp -landlock -- /bin/true)
python3 - "$out" "$rounds" "$lib" <<'PY'
import json, statistics, sys
out, rounds, lib = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{out}/r{r}.json"))["results"]:
        times.setdefault(res["command"], []).extend(res["times"])
for res in json.load(open(f"{out}/starts.json"))["results"]:
    times[res["command"]] = res["times"]
ms = lambda v: v * 1000
rows = {}
for k, v in times.items():
    q = statistics.quantiles(v, n=100)
    rows[k] = (len(v), ms(statistics.median(v)), ms(q[24]), ms(q[74]), ms(q[98]))
for line in lib.splitlines():
    f = line.split()
    rows[f[0]] = (int(f[1]),) + tuple(float(x) for x in f[2:])
b, run = rows["bwrap"][1], rows["airlock-run"][1]
print(f"\n{'command':18} {'runs':>5} {'median ms':>10} {'p25 ms':>8} {'p75 ms':>8} {'p99 ms':>8} {'x bwrap':>8} {'p99/bwrap':>9} {'x run':>6}")
for k, (n, m, p25, p75, p99) in rows.items():
    print(f"{k:18} {n:5} {m:10.2f} {p25:8.2f} {p75:8.2f} {p99:8.2f} {m/b:8.2f} {p99/b:9.2f} {m/run:6.2f}")
print(f"\nthe command line's own part of a step (session-exec - library-step): {rows['session-exec'][1] - rows['library-step'][1]:.2f} ms")
for k, goal in (("library-step", 0.3), ("session-exec", 0.6), ("pool-open", 0.5)):
    r = rows[k][1] / b
    print(f"goal {k} <= {goal}x bwrap:", "met" if r <= goal else "NOT met", f"({r:.2f}x)")
r = rows["library-step"][4] / b
print("goal library-step p99 <= 1x bwrap:", "met" if r <= 1 else "NOT met", f"({r:.2f}x)")
f, s, c = rows["floor-step"][1], rows["floor-sandbox-step"][1], rows["floor-cli"][1]
print(f"floor under a library step: {s/b:.2f}x bwrap in a sandbox (floor-sandbox-step), {f/b:.2f}x with none (floor-step); "
      f"under session-exec (floor-cli): {c/b:.2f}x")
PY
