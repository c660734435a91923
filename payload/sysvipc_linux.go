package payload

import (
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	Register("sysv-ipc", sysvIPC)
	Register("sysv-ipc-count", sysvIPCCount)
}

// sysvIPC takes what SysV IPC gives in the sandbox's IPC namespace and
// reports it (Detail), for the caller to judge against the bounds:
//   - shm_kept: of args[0] segments of 1 MiB (default 64), each touched
//     and detached, how many are still there: memory no process maps,
//     so that no process's memory counts it;
//   - shm_segments: how many segments it could make, never attached;
//   - shm_1tib: the errno of asking for a 1 TiB segment;
//   - msg_queues, msg_bytes: message queues made and filled (kernel
//     memory);
//   - sem_sets: semaphore sets of 250 made;
//
// with the errno that stopped each (*_stop).
func sysvIPC(args []string) int {
	d := map[string]string{}
	for range argInt(args, 0, 64) {
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 1<<20, unix.IPC_CREAT|0o600)
		if err != nil {
			d["shm_touch_stop"] = errnoName(err)
			break
		}
		b, err := unix.SysvShmAttach(id, 0, 0)
		if err != nil {
			d["shm_touch_stop"] = errnoName(err)
			break
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		unix.SysvShmDetach(b)
	}
	d["shm_kept"] = strconv.Itoa(countSysV("shm"))

	segs := 0
	for ; segs < 100000; segs++ {
		if _, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600); err != nil {
			d["shm_stop"] = errnoName(err)
			break
		}
	}
	d["shm_segments"] = strconv.Itoa(segs)
	_, err := unix.SysvShmGet(unix.IPC_PRIVATE, 1<<40, unix.IPC_CREAT|0o600)
	d["shm_1tib"] = errnoName(err)

	queues, bytes := 0, 0
	msg := make([]byte, 8+4096)
	msg[0] = 1 // mtype
	for ; queues < 100000; queues++ {
		id, _, e := unix.Syscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o600, 0)
		if e != 0 {
			d["msg_stop"] = errnoName(e)
			break
		}
		for {
			_, _, e := unix.Syscall6(unix.SYS_MSGSND, id, uintptr(unsafe.Pointer(&msg[0])), 4096, unix.IPC_NOWAIT, 0, 0)
			if e != 0 {
				break
			}
			bytes += 4096
		}
	}
	d["msg_queues"], d["msg_bytes"] = strconv.Itoa(queues), strconv.Itoa(bytes)

	sets := 0
	for ; sets < 100000; sets++ {
		if _, _, e := unix.Syscall(unix.SYS_SEMGET, unix.IPC_PRIVATE, 250, unix.IPC_CREAT|0o600); e != 0 {
			d["sem_stop"] = errnoName(e)
			break
		}
	}
	d["sem_sets"] = strconv.Itoa(sets)
	return report(Report{Attempt: "sysv-ipc", Evidence: "took what SysV IPC gave", Detail: d})
}

// countSysV counts the objects of kind ("shm", "msg", "sem") that
// /proc/sysvipc lists in the caller's IPC namespace, -1 if unreadable.
func countSysV(kind string) int {
	b, err := os.ReadFile("/proc/sysvipc/" + kind)
	if err != nil {
		return -1
	}
	return strings.Count(string(b), "\n") - 1 // the header
}

// sysvIPCCount reports the SysV IPC objects that exist in the sandbox's
// IPC namespace (Detail: shm, msg, sem), as /proc/sysvipc lists them:
// what an earlier step left.
func sysvIPCCount([]string) int {
	d := map[string]string{}
	for _, k := range []string{"shm", "msg", "sem"} {
		d[k] = strconv.Itoa(countSysV(k))
	}
	return report(Report{Attempt: "sysv-ipc-count", Evidence: "counted", Detail: d})
}
