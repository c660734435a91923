package sandbox

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

var traceOn = os.Getenv("AIRLOCK_SBX_TRACE") != ""

func trace(what string) {
	if !traceOn {
		return
	}
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	os.Stderr.WriteString("TRACE " + strconv.FormatInt(ts.Nano()/1000, 10) + " " + strconv.Itoa(os.Getpid()) + " " + what + "\n")
}
