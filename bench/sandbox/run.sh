#!/usr/bin/env bash
# Times a full airlock sandbox start of /bin/true beside bubblewrap, unshare
# and a direct exec, in one hyperfine run, and prints each median's ratio to
# bwrap's. Goal (issue 4): airlock's median <= 0.8x bwrap's.
# Usage: bench/sandbox/run.sh [RUNS]   (as root; installs hyperfine and
# bubblewrap with apt-get when missing)
set -euo pipefail
runs=${1:-200}
cd "$(dirname "$0")/../.."
need=()
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v bwrap >/dev/null || need+=(bubblewrap)
if ((${#need[@]})); then
	apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/sandbox-bench" ./bench/sandbox
hyperfine -N --warmup 20 --runs "$runs" --export-json "$out/r.json" \
	-n airlock "$out/sandbox-bench" \
	-n bwrap 'bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true' \
	-n unshare 'unshare --user --map-root-user --net --pid --fork --mount-proc /bin/true' \
	-n direct '/bin/true'
python3 - "$out/r.json" <<'PY'
import json, sys
rs = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
b = rs["bwrap"]
print(f"\n{'command':10} {'median ms':>10} {'x bwrap':>8}")
for k, v in rs.items():
    print(f"{k:10} {v*1000:10.2f} {v/b:8.2f}")
print("goal airlock <= 0.80x bwrap:", "met" if rs["airlock"] <= 0.8*b else "NOT met")
PY
