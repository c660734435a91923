// Package sandbox runs one approved command in a fresh Linux sandbox and
// reports what happened.
//
// A run is a re-executed copy of the calling binary (the init) in new user,
// pid, mount, network, ipc, uts and cgroup namespaces. The init builds the
// filesystem view on a fresh tmpfs root (system directories bound
// read-only, a private /tmp, /workspace holding a copy of the host's
// workspace, /findings, a minimal /dev and the /proc of the new pid
// namespace), pivots into it, brings up lo, opens the egress proxy's
// listener inside the empty network namespace and hands it back to the
// parent over a control socket. It then drops every privilege it holds —
// uid and gid 65534, every capability set empty, no_new_privs, Landlock,
// seccomp — and waits. On Release it executes the target as its child,
// reaps every zombie and forwards signals until the target exits; when the
// init exits, the kernel kills whatever is left in the pid namespace, and
// the parent kills the cgroup, copies /findings out and tears down.
//
// The parent side is Start, Release, Wait and Kill; the init side is Init,
// which every binary that starts sandboxes calls first thing in main (and
// in TestMain): it returns at once unless the process is a sandbox's init.
//
// On other systems Start fails closed.
package sandbox
