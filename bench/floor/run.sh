#!/usr/bin/env bash
# Times bench/floor — the smallest program that does the work of an
# `airlock run -- /bin/true` (see its package doc) — beside a bare
# `bwrap --unshare-all`, and prints each median's ratio to bwrap's: what
# of issue 15's goal (airlock <= 1.0x bwrap) the work itself allows on
# this machine. Rounds, alternating order, medians over all rounds and the
# load average before and after, as bench/sandbox/run.sh.
#
# Rows:
#   bwrap            bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc
#   floor-ns         the namespaces, the read-only root, /proc, /dev, no
#                    capabilities, no_new_privs, a Go init (this binary
#                    re-executed) running /bin/true and waiting for it
#   floor-cgroup     and a group in the memory, pids and cpuacct v1
#                    hierarchies with two limits, removed after
#   floor-audit      and the audit on the disk the default audit path is on
#                    ($XDG_STATE_HOME, else ~/.local/state): the decision
#                    synced beside the build, the outcome synced, a signed
#                    checkpoint kept and synced. The same work as airlock's
#   floor-audit-tmpfs  the same with the audit on /dev/shm: the difference is
#                    the three fdatasyncs' cost
#   floor-full       floor-audit with a small seccomp filter and Landlock
#                    ruleset (bwrap applies neither)
#   go-hello         a tiny Go program's start: one Go start's floor
#   bwrap-noroot     bwrap --unshare-all --bind / /: bwrap without its root
#   floor-bare       the Go front and the namespaces, /bin/true exec'd as
#                    their pid 1: no root, no init (not a sandbox; a split)
#   floor-bare-cinit the same with a C init exec'd in between
#                    (util-linux `unshare --fork`, which forks and waits):
#                    an exec'd init's cost when it is not Go
#   direct           /bin/true
#
# Usage: bench/floor/run.sh [RUNS] [ROUNDS]   (as root; RUNS per command in
# all, default 200; ROUNDS default 5). Installs hyperfine and bubblewrap
# with apt-get when missing.
set -euo pipefail
runs=${1:-200}
rounds=${2:-5}
cd "$(dirname "$0")/../.."
. bench/lib.sh
need_peers
out=$(mktemp -d)
base=$(state_dir)
state="$base/floor-bench-$$"
shm="/dev/shm/airlock-floor-bench-$$"
mkdir -m 700 "$state" "$shm"
trap 'rm -rf "$out" "$state" "$shm"' EXIT
head -c 32 /dev/urandom >"$state/key"
cp "$state/key" "$shm/key"
# Small static binaries: the floor is the smallest Go start.
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/floor" ./bench/floor
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/hello" ./bench/floor/hello
f="$out/floor"
rows=(
	bwrap 'bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true'
	floor-ns "$f -- /bin/true"
	floor-cgroup "$f -cgroup -- /bin/true"
	floor-audit "$f -cgroup -state $state -- /bin/true"
	floor-audit-tmpfs "$f -cgroup -state $shm -- /bin/true"
	floor-full "$f -cgroup -state $state -seccomp -landlock -- /bin/true"
	go-hello "$out/hello"
	bwrap-noroot 'bwrap --unshare-all --bind / / /bin/true'
	floor-bare "$f -bare -- /bin/true"
	floor-bare-cinit "$f -bare -- $(command -v unshare) --fork /bin/true"
	direct '/bin/true'
)
n=$((${#rows[@]} / 2))
for i in $(seq 0 $((n - 1))); do # each fails loudly if a step fails
	${rows[2 * i + 1]} >/dev/null
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
per=$(((runs + rounds - 1) / rounds))
run_rounds "$out" "$rounds" "$per"
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
if find /sys/fs/cgroup -maxdepth 4 -name 'floor-*' | grep -q .; then
	echo "floor left cgroups behind" >&2
	exit 1
fi
python3 - "$out" "$rounds" <<'PY'
import sys
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, "bench")
import table
out, rounds = sys.argv[1], int(sys.argv[2])
med = table.rows(out, rounds, 18)
b = med["bwrap"]
print(f"\nthe cgroup: {(med['floor-cgroup']-med['floor-ns'])*1000:.2f} ms; "
      f"the audit: {(med['floor-audit']-med['floor-cgroup'])*1000:.2f} ms, "
      f"of which its fdatasyncs {(med['floor-audit']-med['floor-audit-tmpfs'])*1000:.2f} ms")
print(f"an exec'd init: Go {(med['floor-ns']-med['floor-bare'])*1000:.2f} ms with the root, "
      f"C {(med['floor-bare-cinit']-med['floor-bare'])*1000:.2f} ms without; "
      f"bwrap's root {(med['bwrap']-med['bwrap-noroot'])*1000:.2f} ms")
PY
