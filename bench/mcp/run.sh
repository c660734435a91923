#!/usr/bin/env bash
# Times an allowed MCP tool call's round trip in a live session beside a
# fresh `bwrap --unshare-all` run, and prints each median's ratio to
# bwrap's. Goal (issue 15): at most 0.3x bwrap's median, through a
# long-lived client.
#
# Rows, ROUNDS rounds, the order reversed every other round:
#   mcp-stdio      one long-lived Go SDK client to `airlock mcp` over stdio:
#                  tools/call of /bin/true, decided, its synced audit
#                  record, the step in the client's sandbox session, the
#                  structured result back (bench/mcp/main.go)
#   mcp-http       the same over streamable HTTP on 127.0.0.1, bearer token
#   library-step   enforcer.Session.Exec alone (bench/session/main.go): the
#                  part of a call that is not MCP
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
need=()
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v bwrap >/dev/null || need+=(bubblewrap)
if ((${#need[@]})); then
	apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
out=$(mktemp -d)
state="${XDG_STATE_HOME:-$HOME/.local/state}/airlock"
mkdir -p "$state"
audit="$state/bench-mcp-audit-$$.jsonl"
trap 'rm -rf "$out" "$audit"' EXIT
go build -o "$out/airlock" ./cmd/airlock
go build -o "$out/mcp-bench" ./bench/mcp
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
for line in open(f"{out}/mcp.txt"):
    name, n, med, p25, p75 = line.split()
    rows.setdefault(name, []).append((float(med), float(p25), float(p75)))
for line in open(f"{out}/lib.txt"):
    name, n, med, p25, p75 = line.split()
    rows.setdefault(name, []).append((float(med), float(p25), float(p75)))
# The median of each round's median: every round has the same count.
print(f"\n{'row':14} {'median ms':>10} {'p25 ms':>8} {'p75 ms':>8} {'x bwrap':>8}")
med = {}
for name, rs in rows.items():
    med[name] = statistics.median(r[0] for r in rs)
    print(f"{name:14} {med[name]:10.2f} {statistics.median(r[1] for r in rs):8.2f} {statistics.median(r[2] for r in rs):8.2f} {med[name]/b:8.2f}")
print(f"{'bwrap':14} {b:10.2f} {statistics.quantiles(bw, n=4)[0]*1000:8.2f} {statistics.quantiles(bw, n=4)[2]*1000:8.2f} {1:8.2f}")
print()
for t in ("mcp-stdio", "mcp-http"):
    print(f"{t}: MCP's own part (round trip - library-step): {med[t] - med['library-step']:.2f} ms")
print("goal mcp round trip <= 0.3x bwrap:", f"stdio {med['mcp-stdio']/b:.2f}x, http {med['mcp-http']/b:.2f}x")
PY
