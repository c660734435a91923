// Package demo is lab phase 5 for real: an attacker who has coerced an
// agent tries to escape through airlock, and every attempt is contained by
// a named control. It runs on the embedded default policy (the seed's),
// adding one tool, "agent_code", whose only command is airlock's own
// binary bound into the sandbox as the attacker's payload: it stands in
// for the code an allowed command would run (a malicious conftest.py under
// "pytest -v", a post-checkout hook under git). Caps and egress allowlists
// are the default policy's.
package demo
