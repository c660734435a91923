package doctor

// pivotRoot reports whether the sandbox can pivot_root into a fresh root
// and detach the old one: it needs a mount namespace, and a root that is
// not the initramfs (pivot_root(2) fails with EINVAL on rootfs).
func pivotRoot(p Probes, mountns Control) Control {
	c := Control{Name: RequirePivotRoot, Mechanism: "pivot_root(2) into a fresh root, old root detached", Strength: Strong,
		Detail: "the host's tree is unreachable from the sandbox, not merely hidden as under chroot"}
	if mountns.Strength != Strong {
		c.Strength, c.Mechanism = Missing, "none"
		c.Detail = "pivot_root needs a mount namespace, and it is not available (see mountns)"
		c.Fix = mountns.Fix
		return c
	}
	typ, ok := p.rootFSType()
	switch {
	case !ok:
		c.Detail += "; / could not be read from /proc/self/mountinfo, so the root filesystem type is unchecked"
	case typ == "rootfs":
		c.Strength, c.Mechanism = Missing, "none"
		c.Detail = "/ is the initramfs (rootfs), where pivot_root fails with EINVAL"
		c.Fix = "boot from a real root filesystem, or have the initramfs switch_root into one before starting airlock"
	}
	return c
}
