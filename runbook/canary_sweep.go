package runbook

// SweepCanaries removes the canary directories of airlock processes that
// died without removing them (their lock is free), from every place
// NewCanary makes them. A session's watchdog calls it when the session's
// holder dies.
func SweepCanaries() {
	for _, p := range canaryParents() {
		sweepCanaries(p)
	}
}
