#!/usr/bin/env bash
# Measures what inspection costs: HTTPS requests on loopback directly,
# through an opaque airlock tunnel, through airlock's inspection (no rules,
# ten rules), through a minimal interceptor on Go's httputil.ReverseProxy,
# and through elazarl/goproxy's MITM, in one run; new-connection and
# kept-alive request latency, upload and download rates.
# Usage: bench/proxy/inspect.sh [SAMPLES [MIB_PER_RUN [RUNS]]]
# goproxy v1.9.3 is built from the Go module proxy in a temporary module
# outside the repository, from bench/proxy/goproxy/main.go.txt; nothing
# of it is kept.
set -euo pipefail
samples=${1:-1000}
mib=${2:-256}
runs=${3:-3}
cd "$(dirname "$0")/../.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/proxy-bench" ./bench/proxy
mkdir "$out/goproxy"
cp bench/proxy/goproxy/main.go.txt "$out/goproxy/main.go"
(cd "$out/goproxy" && go mod init goproxy-mitm >/dev/null 2>&1 && go get github.com/elazarl/goproxy@v1.9.3 >/dev/null 2>&1 && go build -o "$out/goproxy-mitm" .) ||
	echo "goproxy did not build here; measuring without it" >&2
gp=""
[ -x "$out/goproxy-mitm" ] && gp="$out/goproxy-mitm"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
nice -n "${NICE:-0}" "$out/proxy-bench" -https -goproxy "$gp" -n "$samples" -bytes $((mib << 20)) -runs "$runs"
