package policy

// checkRequire is filled in once the doctor package names the mechanisms.
func checkRequire(p *Policy) []*Error { return nil }
