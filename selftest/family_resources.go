package selftest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/limits"
)

// resourceAttempts try to take more than the caps allow. The cgroup ones
// are skipped, with the receipt's words, on a host that gives this user
// no cgroup for them.
func resourceAttempts() []attempt {
	rs := FamilyResources
	return []attempt{
		slowAttempt(rs, "memory-bomb", ControlCgroupMemory, "touch up to 2 GiB of memory under a 96 MiB cap",
			toolMemory, limits.RequireCgroupMemory, killedBy("memory"), "membomb", "2048"),
		slowAttempt(rs, "fork-bomb", ControlCgroupPids, "start processes as fast as the kernel allows under a 40-task cap",
			toolPids, limits.RequireCgroupPids, killedBy("pids"), "forkbomb", "2000"),
		slowAttempt(rs, "thread-bomb", ControlCgroupPids, "create OS threads under a 40-task cap",
			toolPids, limits.RequireCgroupPids, killedBy("pids"), "threads", "5000"),
		slowAttempt(rs, "cpu-spin", ControlCgroupCPU, "an infinite loop under a 1 s CPU cap",
			toolCPU, limits.RequireCgroupCPU, killedBy("cpu"), "spin", "30"),
		slowAttempt(rs, "cpu-spin-threads", ControlCgroupCPU, "four threads spinning at once under a 1 s CPU cap for the whole group",
			toolCPU, limits.RequireCgroupCPU, killedBy("cpu"), "spin-threads", "4", "30"),
		slowAttempt(rs, "wall-clock", ControlWall, "sleep for a minute under a 2 s wall-clock cap",
			toolWall, "", killedBy("wall"), "sleep", "60"),
		slowAttempt(rs, "big-file", ControlRlimitFsize, fmt.Sprintf("write one 64 MiB file under a %d MiB disk cap", capDiskMiB),
			toolDisk, "", judgeBigFile, "big-file", "/tmp/big", "64"),
		slowAttempt(rs, "fill-tmp", ControlTmpfsSize, fmt.Sprintf("fill /tmp with 1 MiB files under a %d MiB disk cap", capDiskMiB),
			toolDisk, "", atMost("mib", capDiskMiB, "ENOSPC"), "fill", "/tmp", "64"),
		slowAttempt(rs, "fill-shm", ControlTmpfsSize, fmt.Sprintf("fill /dev/shm with 1 MiB files under a %d MiB disk cap", capDiskMiB),
			toolDisk, "", atMost("mib", capDiskMiB, "ENOSPC"), "fill", "/dev/shm", "64"),
		slowAttempt(rs, "fill-workspace", ControlTmpfsSize, fmt.Sprintf("fill /workspace with 1 MiB files under a %d MiB disk cap", capDiskMiB),
			toolDisk, "", atMost("mib", capDiskMiB, "ENOSPC"), "fill", "/workspace", "64"),
		slowAttempt(rs, "fill-all", ControlTmpfsSize, fmt.Sprintf("fill /tmp, /workspace, /findings and /dev/shm in turn under one %d MiB disk cap", capDiskMiB),
			toolDisk, "", atMost("mib", capDiskMiB, "ENOSPC"), "fill-all", "64"),
		slowAttempt(rs, "inode-bomb", ControlTmpfsInodes, fmt.Sprintf("make empty files in /tmp, which take no bytes, under a %d-inode cap", capDiskInodes),
			toolDisk, "", atMost("files", capDiskInodes, "ENOSPC"), "touch", "/tmp", "200000"),
		slowAttempt(rs, "cpu-rlimit", ControlRlimitCPU, "an infinite loop that ignores SIGXCPU under a 1 s CPU cap, however it is stopped",
			toolCPU, "", killedBy("cpu"), "spin", "30"),
		slowAttempt(rs, "cpu-rlimit-xcpu", ControlRlimitCPU, "an infinite loop that dies of SIGXCPU under a 1 s CPU cap",
			toolCPU, "", killedBy("cpu"), "spin", "30", "xcpu"),
		slowAttempt(rs, "output-flood", ControlOutputCap, fmt.Sprintf("write stdout and stderr as fast as they go under a %d MiB output cap", capOutputMiB),
			toolOutput, "", judgeFlood, "flood", "8192"),
		slowAttempt(rs, "open-files", ControlRlimitNofile, fmt.Sprintf("open descriptors without end under a %d-file cap", capOpenFiles),
			toolFDs, "", atMost("opened", capOpenFiles, "EMFILE"), "fds", "100000"),
		payloadAttempt(rs, "sysv-ipc", ControlIPCLimits, "keep detached SysV shared memory, fill 32,000 message queues and make semaphore sets, which no process's limit counts",
			toolPayload, taskNone, judgeSysVIPC, "sysv-ipc", "64"),
		payloadAttempt(rs, "udp-pin", ControlSocketMemory, fmt.Sprintf("queue datagrams nobody reads on every UDP socket it can make, under a %d MiB memory cap", capMemoryMiB),
			toolPayload, taskNone, judgeUDPPin, "udp-pin", "100000", "0"),
		payloadAttempt(rs, "inotify-hog", ControlUserCounts, "take every inotify instance and watch, which the kernel counts against the sandbox's owner on the host too",
			toolPayload, taskNone, judgeCounts(map[string]int{"instances": 16, "watches": 8192}), "inotify-hog", "0"),
		payloadAttempt(rs, "rt-signals", ControlRlimitSigpending, "queue real-time signals to itself, which the kernel counts against the sandbox's owner on the host too",
			toolPayload, taskNone, judgeCounts(map[string]int{"queued": capSigpending}), "rt-signals", "0"),
	}
}

// judgeCounts judges a payload that took what the kernel gave: contained
// when each count it reports is at most its bound.
func judgeCounts(most map[string]int) func(*observation) verdict {
	return func(o *observation) verdict {
		rep, v := ran(o)
		if v != nil {
			return *v
		}
		var got []string
		for _, k := range slices.Sorted(maps.Keys(most)) {
			n, err := strconv.Atoi(rep.Detail[k])
			switch {
			case err != nil:
				return broken(fmt.Sprintf("the payload did not report its %s: %v", k, rep.Detail))
			case n > most[k]:
				return escaped(fmt.Sprintf("%s %d, over the bound of %d: %v", k, n, most[k], rep.Detail))
			}
			got = append(got, fmt.Sprintf("%s %d (at most %d)", k, n, most[k]))
		}
		return contained(strings.Join(got, ", "))
	}
}

// judgeSysVIPC: SysV IPC is refused (ENOSYS: no memory cgroup), or the
// IPC namespace's limits held (no detached segment kept, at most 16
// queues of 16 KiB and 128 semaphore sets), or, rootless, the memory
// cgroup counts it (the receipt says so).
func judgeSysVIPC(o *observation) verdict {
	rep, v := ran(o)
	if v != nil {
		return *v
	}
	d, receipt := rep.Detail, o.res.Receipt["ipc"]
	switch {
	case d["shm_touch_stop"] == "ENOSYS" && d["msg_stop"] == "ENOSYS" && d["sem_stop"] == "ENOSYS":
		return contained("shmget, msgget and semget refused (ENOSYS); receipt: " + receipt)
	case strings.HasPrefix(receipt, "the kernel's defaults, counted by the memory cgroup"):
		return contained(fmt.Sprintf("counted by the memory cgroup (%v); receipt: %s", d, receipt))
	}
	return judgeCounts(map[string]int{"shm_kept": 0, "shm_segments": 64, "msg_queues": 16, "msg_bytes": 16 * 16384, "sem_sets": 128})(o)
}

// judgeUDPPin: UDP sockets are refused (EACCES: no memory cgroup), or
// what the kernel holds of the unread datagrams is within the memory cap.
func judgeUDPPin(o *observation) verdict {
	rep, v := ran(o)
	if v != nil {
		return *v
	}
	if rep.Detail["sockets"] == "0" && rep.Detail["stop"] == "EACCES" {
		return contained("UDP sockets refused (EACCES); receipt: " + o.res.Receipt["seccomp"])
	}
	return judgeCounts(map[string]int{"held_bytes": capMemoryMiB << 20})(o)
}

// judgeFlood: the output cap kills the flood, and what airlock forwarded
// is the cap's worth and the line saying it was cut.
func judgeFlood(o *observation) verdict {
	v := killedBy("output")(o)
	if v.outcome != Contained {
		return v
	}
	if !strings.Contains(o.stdout+o.stderr, "airlock: output cut:") {
		return broken("killed by the output cap, but the forwarded output does not say it was cut")
	}
	return v
}

// atMost judges a payload that took a resource until refused: contained
// when the refusal is errno and it got no more than max of it.
func atMost(key string, max int, errno string) func(*observation) verdict {
	return func(o *observation) verdict {
		v := errnoIs(errno)(o)
		if v.outcome != Contained {
			return v
		}
		rep, _ := o.last()
		n, err := strconv.Atoi(rep.Detail[key])
		switch {
		case err != nil:
			return broken(fmt.Sprintf("the payload did not report its %s: %s", key, rep.Evidence))
		case n > max:
			return escaped(fmt.Sprintf("got %d, over the cap of %d, before %s: %s", n, max, errno, rep.Evidence))
		}
		return contained(fmt.Sprintf("%s after %d (cap %d): %s", errno, n, max, rep.Evidence))
	}
}

// judgeBigFile: RLIMIT_FSIZE either kills the writer (SIGXFSZ, killedBy
// disk) or, when it ignores the signal as Go programs do, fails its write
// with EFBIG at the cap.
func judgeBigFile(o *observation) verdict {
	if o.res.KilledBy != nil {
		return killedBy("disk")(o)
	}
	return atMost("mib", capDiskMiB, "EFBIG")(o)
}
