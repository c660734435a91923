# What the bench/*/run.sh scripts share; they source it from the
# repository's root.

# The binaries are built static, as the README installs them (a build with
# cgo loads libc at every start: docs/sandbox.md, "Speed").
export CGO_ENABLED=0

# state_dir prints airlock's default state directory ($XDG_STATE_HOME/airlock,
# else ~/.local/state/airlock), made private if missing, as airlock keeps it:
# the benchmarks' audit logs go on the disk a user's would.
state_dir() {
	local d="${XDG_STATE_HOME:-$HOME/.local/state}/airlock"
	mkdir -p -m 700 "$d"
	echo "$d"
}

# need_peers installs hyperfine and bubblewrap with apt-get when missing.
need_peers() {
	local need=()
	command -v hyperfine >/dev/null || need+=(hyperfine)
	command -v bwrap >/dev/null || need+=(bubblewrap)
	if ((${#need[@]})); then
		apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
	fi
}

# run_rounds OUT ROUNDS PER [HYPERFINE-OPTION...] times the array rows
# (name, command, name, command, …) in ROUNDS rounds of hyperfine, PER runs
# of each command a round, every other round in reverse order (a sandboxed
# run leaves the kernel work to do after it exits, which would otherwise
# always fall on the same next command); round R's results go to
# OUT/rR.json.
run_rounds() {
	local out=$1 rounds=$2 per=$3
	shift 3
	local n=$((${#rows[@]} / 2)) r i j args
	for r in $(seq 1 "$rounds"); do
		args=()
		for i in $(seq 0 $((n - 1))); do
			j=$i
			if ((r % 2 == 0)); then
				j=$((n - 1 - i))
			fi
			args+=(-n "${rows[2 * j]}" "${rows[2 * j + 1]}")
		done
		hyperfine -N --style none --warmup 5 --runs "$per" "$@" --export-json "$out/r$r.json" "${args[@]}" >/dev/null
	done
}

# true_policy FILE writes the benchmarks' policy: tool scope "bench" allows
# /bin/true alone, and egress is denied.
true_policy() {
	cat >"$1" <<'JSON'
{
  "toolScopes": {
    "bench": {
      "allow": [ { "name": "true", "command": "/bin/true", "argPatterns": [], "allowExtraArgs": false } ]
    }
  },
  "egress": { "default": "deny", "taskAllowlist": {} }
}
JSON
}
