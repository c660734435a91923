package canary

// DropLock releases c's lock without removing it, as the kernel does
// when its owner is killed.
func DropLock(c *Canary) { c.lock.Close() }
