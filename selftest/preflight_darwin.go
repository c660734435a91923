package selftest

import (
	"fmt"
	"os"
	"strconv"
)

// The preflight's payloads and its judge of the first one: on macOS the
// payload runs as the calling user, and /Users is closed to it.
const (
	helloPayload  = "mac-hello"
	getPayload    = "mac-get"
	sandboxedWhat = "the payload runs under its Seatbelt profile, as the calling user, with every user's home (/Users) closed to it"
)

func sandboxedJudge(o *observation) (bool, string) {
	rep, v := ran(o)
	switch {
	case v != nil:
		return false, v.evidence
	case rep.Detail["uid"] != strconv.Itoa(os.Getuid()) || rep.Detail["users"] != "EPERM":
		return false, fmt.Sprintf("uid %s, /Users %s: want %d and EPERM (no profile around the payload?)", rep.Detail["uid"], rep.Detail["users"], os.Getuid())
	}
	return true, rep.Evidence
}
