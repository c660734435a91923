// Package macbox is the body of airlock's macOS sandbox, written for any
// Unix so that it runs, and is tested, on Linux: a session's private
// directory (the workspace copy, the commands' scratch directory, the
// findings directory, the original for Changes), each command started
// by airlock's own binary as a launcher (package launch: its rlimits,
// then the command wrapped in its profile), in a session of its own, and
// watched (seatbelt.Tree: the wall clock, the tree's footprint and
// processes, the copies' size) until it and every process it left are
// dead; the start-up probes run the same way; the changes read through
// an os.Root (the findings are copied out by package findings, as on
// Linux). What needs a Mac is the Platform: sandbox-exec, and the process
// table with footprints.
//
// # Threat model
//
// The commands control every file in the box's workspace, scratch and
// findings directories and may leave processes behind; the Platform's
// profile (Seatbelt on a Mac; nothing in Linux's tests) is what confines
// them, and the start-up probes check it from inside. airlock reads what
// they wrote only through an os.Root of the directory, or by descriptor
// for the findings (no link leads out, no fifo is waited on), after
// killing every process the watch finds; the findings are written only as
// new files in a directory made or taken empty (package findings). A process the watch cannot find or kill is reported
// (Outcome.Survivors), never waited on forever.
package macbox
