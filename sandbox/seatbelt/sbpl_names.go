package seatbelt

// The names SBPL knows, as Parse checks them: each operation with the
// class of objects it acts on, each filter with its arguments and the
// classes it applies to. The lists are those of Apple's own profiles
// (/System/Library/Sandbox/Profiles, /usr/share/sandbox) and of the
// profiles of Chromium, Codex and sandbox-runtime; a name outside them is
// refused, so that a typo in a generated profile fails here, on any
// system, and not only on a Mac.

// class is a set of object kinds, as bits.
type class uint32

const (
	cFile class = 1 << iota
	cExec
	cProcess
	cSignal
	cMach
	cSysctl
	cNetwork
	cIPC
	cIOKit
	cSocket
	cMacSyscall
	cFsctl
	cPreference
	cAppleEvent
	cOther
)

func (c class) has(d class) bool { return c&d != 0 }

// operations maps each known operation to its class. A wildcard (file*)
// has the class of what it covers.
var operations = map[string]class{
	"default": cOther,

	"file*": cFile, "file-chroot": cFile, "file-clone": cFile, "file-ioctl": cFile,
	"file-issue-extension": cFile, "file-link": cFile, "file-lock": cFile,
	"file-map-executable": cFile, "file-mknod": cFile, "file-mount": cFile,
	"file-mount-update": cFile, "file-read*": cFile, "file-read-data": cFile,
	"file-read-metadata": cFile, "file-read-xattr": cFile, "file-revoke": cFile,
	"file-search": cFile, "file-test-existence": cFile, "file-unmount": cFile,
	"file-write*": cFile, "file-write-acl": cFile, "file-write-create": cFile,
	"file-write-data": cFile, "file-write-finderinfo": cFile, "file-write-flags": cFile,
	"file-write-mode": cFile, "file-write-owner": cFile, "file-write-setugid": cFile,
	"file-write-times": cFile, "file-write-unlink": cFile, "file-write-xattr": cFile,

	"process*": cExec | cProcess, "process-exec*": cExec, "process-exec": cExec,
	"process-exec-interpreter": cExec, "process-fork": cOther,
	"process-info*": cProcess, "process-info-codesignature": cProcess,
	"process-info-dirtycontrol": cProcess, "process-info-listpids": cProcess,
	"process-info-pidinfo": cProcess, "process-info-pidfdinfo": cProcess,
	"process-info-pidfileportinfo": cProcess, "process-info-rusage": cProcess,
	"process-info-setcontrol": cProcess, "process-codesigning*": cProcess,
	"signal": cSignal,

	"mach*": cMach, "mach-bootstrap": cOther, "mach-host*": cOther, "mach-issue-extension": cMach,
	"mach-lookup": cMach, "mach-per-user-lookup": cMach, "mach-priv*": cOther,
	"mach-priv-host-port": cOther, "mach-priv-task-port": cProcess, "mach-register": cMach,
	"mach-task-name": cProcess,

	"sysctl*": cSysctl, "sysctl-read": cSysctl, "sysctl-write": cSysctl,

	"network*": cNetwork | cFile, "network-bind": cNetwork | cFile,
	"network-inbound": cNetwork | cFile, "network-outbound": cNetwork | cFile,

	"ipc*": cIPC, "ipc-posix*": cIPC, "ipc-posix-issue-extension": cIPC, "ipc-posix-sem": cIPC,
	"ipc-posix-shm*": cIPC, "ipc-posix-shm-read*": cIPC, "ipc-posix-shm-read-data": cIPC,
	"ipc-posix-shm-read-metadata": cIPC, "ipc-posix-shm-write*": cIPC,
	"ipc-posix-shm-write-create": cIPC, "ipc-posix-shm-write-data": cIPC,
	"ipc-posix-shm-write-unlink": cIPC, "ipc-sysv*": cOther, "ipc-sysv-msg": cOther,
	"ipc-sysv-sem": cOther, "ipc-sysv-shm": cOther,

	"iokit*": cIOKit, "iokit-open": cIOKit, "iokit-get-properties": cIOKit,
	"iokit-set-properties": cIOKit, "iokit-issue-extension": cIOKit,

	"system*": cOther, "system-socket": cSocket, "system-mac-syscall": cMacSyscall,
	"system-fsctl": cFsctl, "system-info": cOther, "system-audit": cOther,
	"system-sched": cOther, "system-privilege": cOther, "system-set-time": cOther,
	"system-kext*": cOther, "system-reboot": cOther, "system-acct": cOther,
	"system-swap": cOther, "system-nfssvc": cOther, "system-mac-label": cOther,
	"system-suspend-resume": cOther, "system-package-check": cOther,

	"user-preference*": cPreference, "user-preference-read": cPreference,
	"user-preference-write": cPreference,
	"appleevent-send":       cAppleEvent, "lsopen": cFile, "pseudo-tty": cOther,
	"dynamic-code-generation": cOther, "job-creation": cFile, "load-unsigned-code": cOther,
	"distributed-notification-post": cOther, "darwin-notification-post": cOther,
	"authorization-right-obtain": cOther, "boot-arg-set": cOther, "hid-control": cOther,
	"device*": cOther, "device-camera": cOther, "device-microphone": cOther,
	"qtn-user": cOther, "qtn-download": cOther, "qtn-sandbox": cOther,
	"generic-issue-extension": cOther,
}

// filterSpec is a filter's arguments and the classes it applies to.
type filterSpec struct {
	args  []argKind
	class class
}

// paths are the classes whose objects have paths: files, executables,
// and unix sockets (network operations).
const paths = cFile | cExec | cNetwork

var filters = map[string]filterSpec{
	"literal":        {[]argKind{absPath}, paths},
	"path":           {[]argKind{absPath}, paths},
	"subpath":        {[]argKind{absPath}, paths},
	"prefix":         {[]argKind{absPath}, paths},
	"path-ancestors": {[]argKind{absPath}, paths},
	"regex":          {[]argKind{regexArg}, paths},
	"vnode-type": {[]argKind{oneOf("REGULAR-FILE", "DIRECTORY", "SYMLINK", "CHARACTER-DEVICE",
		"BLOCK-DEVICE", "FIFO", "SOCKET", "TTY")}, paths},
	"file-mode": {[]argKind{want(kNumber)}, paths},
	"extension": {[]argKind{want(kString)}, paths | cMach | cIOKit},

	"global-name":       {[]argKind{want(kString)}, cMach},
	"global-name-regex": {[]argKind{regexArg}, cMach},
	"local-name":        {[]argKind{want(kString)}, cMach},
	"local-name-regex":  {[]argKind{regexArg}, cMach},
	"xpc-service-name":  {[]argKind{want(kString)}, cMach},

	"sysctl-name":        {[]argKind{want(kString)}, cSysctl},
	"sysctl-name-prefix": {[]argKind{want(kString)}, cSysctl},
	"sysctl-name-regex":  {[]argKind{regexArg}, cSysctl},

	"remote": {[]argKind{ipKind, address}, cNetwork},
	"local":  {[]argKind{ipKind, address}, cNetwork},

	"target": {[]argKind{oneOf("self", "same-sandbox", "children", "parent", "others", "pgrp")}, cSignal | cProcess},

	"ipc-posix-name":        {[]argKind{want(kString)}, cIPC},
	"ipc-posix-name-regex":  {[]argKind{regexArg}, cIPC},
	"ipc-posix-name-prefix": {[]argKind{want(kString)}, cIPC},

	"iokit-registry-entry-class": {[]argKind{want(kString)}, cIOKit},
	"iokit-user-client-class":    {[]argKind{want(kString)}, cIOKit},
	"iokit-property":             {[]argKind{want(kString)}, cIOKit},

	"socket-domain":   {[]argKind{want(kSymbol)}, cSocket},
	"socket-type":     {[]argKind{want(kSymbol)}, cSocket},
	"socket-protocol": {[]argKind{want(kNumber)}, cSocket},

	"mac-policy-name":    {[]argKind{want(kString)}, cMacSyscall},
	"mac-syscall-number": {[]argKind{want(kNumber)}, cMacSyscall},
	"fsctl-command":      {[]argKind{want(kSymbol)}, cFsctl},

	"preference-domain":      {[]argKind{want(kString)}, cPreference},
	"appleevent-destination": {[]argKind{want(kString)}, cAppleEvent},
}
