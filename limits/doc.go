// Package limits enforces airlock's resource caps on one sandboxed run: wall
// clock, CPU time, memory, tasks (processes and threads), bytes written and
// open files. (The output cap, Caps.OutputBytes, is the sandbox's to count:
// it forwards the output; Trip ends the run for it.)
//
// A Group is one run's cgroup (or cgroups): cgroup v2 where the host has it,
// cgroup v1 controllers on legacy and hybrid hosts, and on a hybrid host
// also a directory in the unified hierarchy for cgroup.kill and
// CLONE_INTO_CGROUP. Under the cgroups sit per-process rlimits that the
// sandbox's init applies before it executes the target. Watch turns a
// tripped cap into a kill of the whole tree, attributed to the cap that
// tripped; KillAll leaves no process behind, double-forked daemons and
// setsid orphans included; Delete leaves no directory behind.
//
// Where the host gives this user no usable cgroup (rootless without
// delegation), New still returns a Group, which enforces what rlimits and
// the wall clock can and says so in its Receipt; a policy that requires a
// cgroup mechanism (Options.Require) makes New fail instead, so that a run
// never degrades silently.
//
// The sandbox calls, in order:
//
//	g, err := limits.New(caps, limits.Options{Name: runID, Require: policyRequire})
//	// errors.Is(err, limits.ErrUnavailable): the policy requires what the
//	// host lacks; refuse the run (exit 125)
//	fd, ok := g.Dir()               // if ok: SysProcAttr.UseCgroupFD/CgroupFD
//	// start the init, which waits on a pipe
//	g.Place(initPid)                // before the init executes the target
//	// the init sets g.Rlimits() on itself just before execve
//	go g.Watch(ctx, onKill)         // wall clock, CPU, OOM and tasks caps
//	// wait for the init; cancel ctx; wait for Watch to return
//	g.KilledBy()                    // else limits.SignalCause(signal, cpu, caps.CPU)
//	g.Stats(); g.Receipt()
//	g.Delete()                      // kills what is left, removes every directory
//
// Dirs gives the group's directories to a caller that works on the
// group's own files (the sandbox's init moves itself into the v1
// hierarchies through their tasks files; its evidence reads
// cgroup.procs), and Freeze and Thaw stop and restart every process of
// the group with its own freezer, for the suspected-escape procedure.
package limits
