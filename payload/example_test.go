package payload_test

import (
	"os"

	"github.com/airlock-sandbox/airlock/payload"
)

// A payload reports one JSON line per attempt; the battery and the demo
// read the last one with Parse.
func ExampleEmit() {
	payload.Emit(os.Stdout, payload.Report{Attempt: "read-file", Errno: "ENOENT",
		Evidence: "open /root/.aws/credentials: no such file or directory"})
	// Output: {"attempt":"read-file","succeeded":false,"errno":"ENOENT","evidence":"open /root/.aws/credentials: no such file or directory"}
}
