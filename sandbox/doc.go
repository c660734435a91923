// Package sandbox runs approved commands in a fresh Linux sandbox and
// reports what happened.
//
// # One run
//
// A run is a re-executed copy of the calling binary (the init) in new user,
// pid, mount, network, ipc, uts and cgroup namespaces. The init builds the
// filesystem view on a fresh tmpfs root (system directories bound
// read-only, or the entries of an image root, Config.Root; a private /tmp,
// /workspace holding a copy of the host's workspace, /findings, a minimal
// /dev and the /proc of the new pid namespace), pivots into it, brings up
// lo, opens the egress proxy's listener inside the empty network namespace
// and hands it back to the parent over a control socket. It then drops
// every privilege it holds — uid and gid 65534, every capability set
// empty, no_new_privs, Landlock, seccomp — and waits. On Release it
// executes the target as its child, reaps every zombie and forwards
// signals until the target exits; when the init exits, the kernel kills
// whatever is left in the pid namespace, and the parent kills the cgroup,
// copies /findings out and tears down.
//
// The parent side is Start, Release, Wait and Kill. The init's code is in
// internal/initproc, whose package initialiser runs it: a re-executed
// init starts working before the rest of the binary's packages are
// initialised (and never reaches main), which saves about half of what
// starting the airlock binary costs (see that package's doc). Every binary
// that starts sandboxes still calls Init first thing in main (and in
// TestMain): it returns at once unless the process is an init that waited
// for it, which only a test binary's init with a test hole does.
//
// # Sessions
//
// StartSession builds the same sandbox but runs no command: the init stays
// pid 1 and runs one Step after another on request (Session.Exec), each in
// the same namespaces, filesystem and cgroup, each with its own streams
// and its own wall clock and CPU cap, each ending with every process it
// left behind killed. Memory, tasks and disk are the session's. A step
// killed by a cap ends only itself unless Step.EndSessionOnKill says so.
// Close kills everything, copies /findings out and tears down. For the
// suspected-escape procedure, Freeze stops every process (the cgroup
// freezer) and Evidence snapshots, from the host, the process tree, the
// mounts, the namespaces, the network namespace's sockets and the
// workspace (mtimes, and a copy kept in the evidence directory).
//
// # Getting into the cgroup
//
// The init is cloned straight into the group's cgroup v2 directory and
// moves its main thread into the v1 hierarchies itself, from descriptors
// the parent opened (see place_linux.go): no write to cgroup.procs, whose
// lock costs an RCU grace period (10 to 13 ms here) on every start. The
// Result's receipt says how the init got in ("placement").
//
// # Test holes
//
// A test binary that imports package sandbox/holes can make the init
// skip one step of its setup — stay uid 0, keep its capabilities, leave
// no_new_privs unset, install no seccomp filter or no Landlock domain,
// share the host's network namespace, bind the host's homes in — so that
// the start-up probe watching that step is seen to fail and the start to
// be refused (holes.Open). airlock's own binary links no hole, and its
// init refuses one (initproc.Hole says why).
//
// # macOS
//
// On a Mac the same API runs each command under a Seatbelt profile made
// from the Config for it (package seatbelt), in a private directory of
// copies, with rlimits and a watch of its process tree where Linux has
// namespaces and cgroups (package internal/macbox, the _darwin.go files;
// docs/sandbox.md, "macOS"). Config.SearchPath is what a process may
// execute there besides Path.
//
// On other systems Start and StartSession fail closed.
package sandbox
