#!/usr/bin/env bash
# Times MCP tool calls to `airlock mcp` beside a fresh `bwrap --unshare-all`
# run, and prints each row's median and p99 with their ratios to bwrap's
# median. Goals (issue 15): a call in a live session through a long-lived
# client at most 0.3x bwrap at the median and 1x at p99; a new session
# ready for its first command from a pool at most 0.5x.
#
# Rows, ROUNDS rounds, the order reversed every other round
# (bench/mcp/main.go, bench/session/main.go):
#   mcp-stdio      one long-lived Go SDK client to `airlock mcp` over stdio:
#                  tools/call of /bin/true, decided, its synced audit
#                  record, the step in the client's sandbox session, the
#                  structured result back
#   mcp-http       the same over streamable HTTP on 127.0.0.1, bearer token
#   first-pool     a new MCP session's first call (it opens the sandbox
#                  session) to `airlock mcp --http --pool 1`, on a sandbox
#                  built ahead; RUNS/4 in all
#   first-cold     the same to `airlock mcp --http`, the sandbox built then
#   library-step   enforcer.Session.Exec alone: the part of a call that is
#                  not MCP
#   bwrap          hyperfine: bwrap --unshare-all --ro-bind / / --dev /dev
#                  --proc /proc /bin/true
#
# Usage: bench/mcp/run.sh [RUNS] [ROUNDS]   (as root; RUNS calls per row in
# all, default 200; ROUNDS default 5). Installs hyperfine and bubblewrap
# with apt-get when missing.
set -euo pipefail
runs=${1:-200}
rounds=${2:-5}
cd "$(dirname "$0")/../.."
. bench/lib.sh
need_peers
out=$(mktemp -d)
state=$(state_dir)
audit="$state/bench-mcp-audit-$$.jsonl"
trap 'rm -rf "$out" "$audit"*' EXIT # the log and its .tree, .runs and .checkpoint
go build -o "$out/airlock" ./cmd/airlock
go build -o "$out/mcp-bench" ./bench/mcp
go build -o "$out/session-bench" ./bench/session
true_policy "$out/policy.json"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
per=$(((runs + rounds - 1) / rounds))
for r in $(seq 1 "$rounds"); do
	bw() { hyperfine -N --style none --warmup 5 --runs "$per" --export-json "$out/b$r.json" \
		'bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true' >/dev/null 2>&1; }
	calls() {
		"$out/mcp-bench" "$out/airlock" "$out/policy.json" "$audit" "$per" 2>"$out/mcp.err" >>"$out/mcp.txt" || { cat "$out/mcp.err" >&2; exit 1; }
		"$out/session-bench" "$out/policy.json" "$audit" "$per" >>"$out/lib.txt"
	}
	if ((r % 2)); then bw; calls; else calls; bw; fi
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
bw = []
for r in range(1, rounds + 1):
    bw += json.load(open(f"{out}/b{r}.json"))["results"][0]["times"]
b = statistics.median(bw) * 1000
rows = {}
for f in ("mcp.txt", "lib.txt"):
    for line in open(f"{out}/{f}"):
        name, n, med, p25, p75, p99 = line.split()
        if name in ("pool-open", "cold-open"):
            continue  # bench/session/run.sh's rows
        rows.setdefault(name, []).append((float(med), float(p25), float(p75), float(p99)))
# The median of each round's figure: every round has the same count.
print(f"\n{'row':14} {'median ms':>10} {'p25 ms':>8} {'p75 ms':>8} {'p99 ms':>8} {'x bwrap':>8} {'p99/bwrap':>9}")
med, p99 = {}, {}
for name, rs in rows.items():
    med[name] = statistics.median(r[0] for r in rs)
    p99[name] = statistics.median(r[3] for r in rs)
    print(f"{name:14} {med[name]:10.2f} {statistics.median(r[1] for r in rs):8.2f} {statistics.median(r[2] for r in rs):8.2f} {p99[name]:8.2f} {med[name]/b:8.2f} {p99[name]/b:9.2f}")
q = statistics.quantiles(bw, n=100)
print(f"{'bwrap':14} {b:10.2f} {q[24]*1000:8.2f} {q[74]*1000:8.2f} {q[98]*1000:8.2f} {1:8.2f} {q[98]*1000/b:9.2f}")
print()
for t in ("mcp-stdio", "mcp-http"):
    print(f"{t}: MCP's own part (round trip - library-step): {med[t] - med['library-step']:.2f} ms")
print(f"first-pool saves {med['first-cold'] - med['first-pool']:.2f} ms of a cold session's first call")
for k, m, goal in (("mcp-stdio", med, 0.3), ("mcp-http", med, 0.3), ("mcp-stdio p99", p99, 1), ("first-pool", med, 0.5)):
    r = m[k.split()[0]] / b
    print(f"goal {k} <= {goal}x bwrap:", "met" if r <= goal else "NOT met", f"({r:.2f}x)")
PY
