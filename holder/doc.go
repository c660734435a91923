// Package holder keeps an agent's session alive between the commands of
// a harness that shells out: `airlock session start` runs a holder, a
// background airlock process (re-executed, detached, in its own session)
// that owns the session's sandbox (enforcer.Session) and serves it on a
// unix socket in a private per-user runtime directory (Dir); `airlock
// session exec`, `changes`, `stop` and `list` are its clients (Dial).
//
// Only the same user may talk to a holder: the directory is the user's
// own and 0700, the server checks every connection's peer credentials
// (SO_PEERCRED; LOCAL_PEERCRED on macOS), and the client checks the socket's owner and the
// holder's peer credentials, so another user can neither reach a holder
// nor impersonate one. The sandbox has no view of the directory.
//
// One request is one connection: a length-prefixed JSON message and its
// answer. A step's (package holder/step, the same from both clients of
// session exec) comes with the client's pipes for the step's stdin,
// stdout and stderr, passed by SCM_RIGHTS (the sandbox itself only ever
// gets pipes of its own); the holder runs it and tells its outcome on
// them as `airlock run` does (enforcer.Report), then answers its exit
// status. The client relays its own streams through those pipes, so the
// holder never holds a terminal or a stream that outlives the client.
//
// The holder runs under a watchdog (Watch), its parent and a child
// subreaper, that waits for it; when the holder dies (kill -9), its
// sandbox dies with it (the init's parent-death signal) and is reaped by
// the watchdog, which then removes what is left — the cgroups, the probe
// canary, the socket and the lock — and records the teardown in the audit
// stream. On macOS, with neither subreaper nor parent-death signal, the
// watchdog follows the holder's processes in the process table and kills
// those it left (orphans). The contract is in docs/sessions.md.
package holder
