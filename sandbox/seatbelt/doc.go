// Package seatbelt holds the parts of airlock's macOS sandbox that do not
// need a Mac, so that they are tested on any system: the Seatbelt profile
// generated from the policy for each command (Prepare, Profile), a parser
// of the profile language that refuses what sandbox-exec would refuse
// (Parse), the rlimits planned from the caps (Rlimits), the watch's
// reading of a process tree and of the copies' size (Tree, Over,
// DiskUsage), and what each control is on a Mac (Controls, Receipt).
// Package sandbox's darwin files are the thin rest: sandbox-exec,
// setrlimit, the process table and kill.
//
// # Threat model
//
// The contained code controls everything a process under the profile
// can do, and the files of the workspace copy; the agent controls the
// command line, which the command gate decides before any profile is
// made; the policy's author controls the paths the profile names. The
// profile is text that sandbox-exec compiles: a path that could break out
// of its string is refused (Spec.Check), never escaped, and the parser
// checks every generated profile in the tests. What the profile cannot
// express is said in the receipt and by doctor (Controls): macOS has no
// namespaces, so the tree, its memory and its tasks are watched, not held.
//
// # The profile, and what others learned
//
// airlock's profile denies by default and allows, by name, only what
// common tools need; every allowance carries its reason in the profile's
// text. Read, never copied: the profiles of Anthropic's sandbox-runtime
// (src/sandbox/macos-sandbox-utils.ts) and OpenAI's Codex
// (codex-rs/core/src/seatbelt_*.sbpl, after Chromium's), and what their
// users found:
//
//   - Allow-default profiles are escapes, not sandboxes: everything
//     nobody listed stays open, file-mount among it (CVE-2023-32364: a
//     devfs mount, then Launch Services starts an unsandboxed app). Parse
//     refuses (allow default).
//   - Both allow (process-exec) of anything; sandbox-runtime also reads
//     the whole disk except a deny-list. airlock executes only the
//     resolved program and the search path, and reads only the system's
//     trees, the policy's readOnly and the copy: no home directory.
//   - sandbox-runtime allows Launch Services (com.apple.coreservices.
//     launchservicesd, com.apple.lsd.mapdb): open(1) starts applications
//     outside the sandbox. Apple events, the pasteboard, the keychain
//     (SecurityServer, securityd) and cfprefsd are ways out too; airlock
//     allows none of them.
//   - Codex allows writes and ioctls on every /dev/ttys*: the user's other
//     terminals. airlock passes no terminal (stdio are pipes, the command
//     is a session leader without a controlling terminal) and allows no
//     pty.
//   - Seatbelt compares real paths: /tmp, /var and /etc are links into
//     /private, and a Homebrew bin directory is links into its Cellar; a
//     rule on the link's name alone matches nothing (the breakage
//     projects report as "sandbox-exec cannot run /bin/sh"). Prepare
//     lists both names.
//   - Go programs verify TLS through trustd (OSStatus -26276 without it),
//     and trustd fetches OCSP answers, CRLs and issuers for them, outside
//     the proxy. It is allowed only under the weaker mode WeakerTrustd.
//   - Seatbelt cannot name remote addresses: a rule allows "localhost" or
//     "*" with a port. Egress goes to the proxy's loopback port or
//     nowhere; DNS (mDNSResponder) is not allowed, so names are resolved
//     by the proxy alone.
//   - Known breakages of a strict profile, kept: xcrun's shims in
//     /usr/bin execute the developer directory's tools (add it to the
//     search path and readOnly); programs built in the workspace cannot be
//     executed, nor libraries built there loaded (Linux allows both); ps
//     and psutil see only the sandbox's own processes; Chromium's helpers
//     need mach-register, refused.
//   - Residual: Seatbelt decides by path, so a hard link made in the copy
//     to a file of the user's on the same volume is reached by the copy's
//     path; selftest's battery attempts it (docs/sandbox.md, "macOS").
//     sandbox-exec is deprecated by Apple, though still shipped and used
//     by every tool above.
package seatbelt
