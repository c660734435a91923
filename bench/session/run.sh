#!/usr/bin/env bash
# Times one command in a live session beside a fresh sandbox and the
# peers, and prints each median's ratio to bwrap's and to `airlock run`'s.
# Goal (issue 12): a command in a session costs a fraction of a fresh
# sandbox.
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
# and, from bench/session (not hyperfine: in one process), library-step:
# enforcer.Session.Exec alone, RUNS steps.
#
# The audit log is on the disk the default audit path is on, as a user's
# is; it grows by one step's records each run (the session's), so that
# row is not reset between runs.
#
# Usage: bench/session/run.sh [RUNS] [ROUNDS]   (as root; RUNS per command
# in all, default 200; ROUNDS default 5). Installs hyperfine and
# bubblewrap with apt-get when missing.
set -euo pipefail
runs=${1:-200}
rounds=${2:-5}
cd "$(dirname "$0")/../.."
need=()
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v bwrap >/dev/null || need+=(bubblewrap)
if ((${#need[@]})); then
	apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
out=$(mktemp -d)
state="${XDG_STATE_HOME:-$HOME/.local/state}/airlock"
mkdir -p "$state"
audit="$state/bench-session-audit-$$.jsonl"
libaudit="$state/bench-session-lib-$$.jsonl"
trap 'rm -rf "$out" "$audit" "$libaudit"' EXIT
export XDG_RUNTIME_DIR="$out/run"
mkdir -m 700 "$XDG_RUNTIME_DIR"
go build -o "$out/airlock" ./cmd/airlock
go build -o "$out/session-bench" ./bench/session
cat >"$out/policy.json" <<'JSON'
{
  "toolScopes": {
    "bench": {
      "allow": [ { "name": "true", "command": "/bin/true", "argPatterns": [], "allowExtraArgs": false } ]
    }
  },
  "egress": { "default": "deny", "taskAllowlist": {} }
}
JSON
a="$out/airlock"
id=$("$a" --policy "$out/policy.json" session start --audit "$audit")
trap '"$a" session stop "$id" >/dev/null 2>&1 || true; rm -rf "$out" "$audit" "$libaudit"' EXIT
"$a" session exec "$id" --tool bench -- /bin/true # fails loudly if it cannot run
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
per=$(((runs + rounds - 1) / rounds))
rows=(
	session-exec "$a session exec $id --tool bench -- /bin/true"
	airlock-run "$a run --policy $out/policy.json --tool bench --audit $audit -- /bin/true"
	airlock-help "$a --help"
	bwrap 'bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true'
	direct '/bin/true'
)
n=$((${#rows[@]} / 2))
for r in $(seq 1 "$rounds"); do
	args=()
	for i in $(seq 0 $((n - 1))); do
		j=$i
		if ((r % 2 == 0)); then
			j=$((n - 1 - i))
		fi
		args+=(-n "${rows[2 * j]}" "${rows[2 * j + 1]}")
	done
	hyperfine -N --style none --warmup 5 --runs "$per" --export-json "$out/r$r.json" "${args[@]}" >/dev/null
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
lib=$("$out/session-bench" "$out/policy.json" "$libaudit" "$runs")
python3 - "$out" "$rounds" "$lib" <<'PY'
import json, statistics, sys
out, rounds, lib = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
times = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{out}/r{r}.json"))["results"]:
        times.setdefault(res["command"], []).extend(res["times"])
med = {k: statistics.median(v) * 1000 for k, v in times.items()}
b, run = med["bwrap"], med["airlock-run"]
print(f"\n{'command':14} {'runs':>5} {'median ms':>10} {'p25 ms':>8} {'p75 ms':>8} {'x bwrap':>8} {'x run':>6}")
for k, v in times.items():
    q = statistics.quantiles(v, n=4)
    print(f"{k:14} {len(v):5} {med[k]:10.2f} {q[0]*1000:8.2f} {q[2]*1000:8.2f} {med[k]/b:8.2f} {med[k]/run:6.2f}")
m = float(lib[2])
print(f"{lib[0]:14} {lib[1]:>5} {m:10.2f} {float(lib[3]):8.2f} {float(lib[4]):8.2f} {m/b:8.2f} {m/run:6.2f}")
print(f"\nthe command line's own part of a step (session-exec - library-step): {med['session-exec'] - m:.2f} ms")
print("goal session-exec a fraction of airlock-run:", f"{med['session-exec']/run:.2f}x")
PY
