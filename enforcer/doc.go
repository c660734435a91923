// Package enforcer composes airlock's gates into one run: the command
// gate decides, the decision is made durable in the audit stream, the
// sandbox starts with the egress proxy serving inside its network
// namespace, every egress decision is audited before the connection it
// allows, and the outcome — exit, signal, the cap that killed the run and
// the mechanism that enforced each control — is audited and returned.
//
// This is the one place where the controls meet; the command line and
// other embedders call Run.
package enforcer
