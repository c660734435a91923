#!/usr/bin/env bash
# Times the three workloads of bench/workload (a Python package, a Node
# package, a Go module: what a coding agent does, end to end) run directly
# on the host and then in an airlock session through the command line, and
# prints each one's times and their ratio. Goal (issue 24): a workload in a
# session within 1.1x of the same steps run directly.
#
# Directly, the steps run in a copy of the project with the environment the
# sandbox gives (a fresh HOME and caches under a private TMPDIR, the
# policy's search path, no proxy); in the session they are the agent's
# session exec calls, timed from session start to session stop --patch
# (the patch checked after, untimed). Both start with empty caches: Go's
# first go test compiles the standard library's packages it needs, pip
# and npm fetch from the test's own index and registry on loopback.
#
# Measured at a load average of about 20 on 2 shared cores (December 2026,
# five runs of the Python and Node workloads, two of the Go one): Python
# 0.91-1.11x, Node 0.88-1.47x, Go 0.78-1.12x, within the host's noise
# (one direct run of a step differs from the next by up to 2x). airlock's
# own part is the session's start (0.04-0.17 s), its stop with the patch
# (0.01-0.07 s) and about 10-20 ms a step (`session exec -- true`).
#
# On a quiet host (load average 1-2, two rounds, `bench/workload/run.sh 2`):
# Python 0.92x and 0.92x, Go 0.98x and 1.04x, Node 1.06x and 1.35x: Node's
# whole workload takes about a second, so airlock's fixed ~0.1-0.3 s (its
# start, stop and per-step costs, npm install through the proxy) is a
# larger share of it.
#
# Usage: bench/workload/run.sh [ROUNDS]   (as root; ROUNDS default 3, each
# a direct run and a session of every workload)
set -euo pipefail
rounds=${1:-3}
cd "$(dirname "$0")/../.."
. bench/lib.sh
# The direct runs on a tmpfs, as the session's /workspace and /tmp are (on
# a disk, the direct runs pay for it: Python's venv --copies and go test's
# first build write hundreds of MB).
WORKLOAD_DIRECT_DIR=$(mktemp -d -p /dev/shm)
export WORKLOAD_DIRECT_DIR
trap 'rm -rf "$WORKLOAD_DIRECT_DIR"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
	WORKLOAD_BENCH=1 go test -count=1 -timeout 60m -run TestWorkloads -v ./bench/workload | grep -o -e 'workload .*x$' -e 'seconds of each step.*'
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
