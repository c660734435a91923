package policy

// TEMPORARY until egress.ValidateEntry and doctor.RequirementNames land.
func checkEgress(p *Policy) []*Error  { return nil }
func checkRequire(p *Policy) []*Error { return nil }
