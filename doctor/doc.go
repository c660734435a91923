// Package doctor reports which mechanism enforces each of airlock's
// controls on this host, and how strongly: user and other namespaces,
// pivot_root, no_new_privs, seccomp, Landlock, cgroup controllers, the
// open-files limit and the egress proxy. It explains the common failures
// (unprivileged user namespaces restricted by AppArmor on Ubuntu 24.04, no
// cgroup delegation, a kernel without Landlock) with the fix for each.
// On macOS it reports the same controls as the Mac holds them (Seatbelt
// and airlock's watch; package seatbelt), weaker where the Mac has no
// namespace or cgroup, so that a policy's "require" fails closed there.
//
// It serves "airlock doctor", the run receipt, and the policy's "require"
// list: RequirementNames are the names a policy may require, and
// Satisfies says which of them this host lacks.
//
// Every reading goes through Probes, so that tests can play other hosts
// (an Ubuntu 24.04 laptop, an old kernel, a host without delegation) with
// a fake /proc and /sys.
package doctor
