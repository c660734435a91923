package selftest

import "fmt"

// The preflight's payloads and its judge of the first one: on Linux the
// payload runs as uid 65534 with no_new_privs and a seccomp filter.
const (
	helloPayload  = "hello"
	getPayload    = "http-get"
	sandboxedWhat = "the payload runs inside a sandbox, as uid 65534, with no_new_privs and a seccomp filter"
)

func sandboxedJudge(o *observation) (bool, string) {
	rep, v := ran(o)
	switch {
	case v != nil:
		return false, v.evidence
	case rep.Detail["uid"] != "65534" || rep.Detail["noNewPrivs"] != "1" || rep.Detail["seccomp"] != "2":
		return false, fmt.Sprintf("uid %s, no_new_privs %s, seccomp mode %s: want 65534, 1, 2",
			rep.Detail["uid"], rep.Detail["noNewPrivs"], rep.Detail["seccomp"])
	}
	return true, fmt.Sprintf("%s; no_new_privs 1, seccomp mode 2, CapEff %s", rep.Evidence, rep.Detail["capEff"])
}
