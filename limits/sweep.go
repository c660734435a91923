package limits

// SweepStale removes the cgroup directories of groups whose owning airlock
// process died without removing them, killing what is still inside
// (New does this first too). A session's watchdog calls it when the
// session's holder dies, so that nothing of its sandbox is left.
func SweepStale() { sweepStale() }
