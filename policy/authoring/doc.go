// Package authoring helps a person write a policy: it runs the examples a
// policy carries and a file of test cases against the policy's own gates
// (Examples, Cases), proposes the smallest additions that would have
// allowed what the audit stream shows refused (Suggest), and names every
// way one policy allows more than another (Diff). Every decision it shows
// is the command gate's or the egress gate's own (cmdgate.Gate.Decide,
// egress.Gate.CheckHostPort, CheckResolved, Entry.CheckRequest): there is
// no second implementation of matching here.
//
// Who controls the inputs. The policies and the cases file are the
// operator's. The audit log is written by airlock, but most of its strings
// were chosen by the agent or by the contained code: a command's
// arguments, the hosts and paths sent to the proxy, tool and task names.
// Suggest reads only records whose chain verifies, and treats every such
// string as hostile: it never turns one into a pattern (an argument is
// matched exactly, "*" in it included), proposes a wildcard only from
// normalised host names and says so, leaves out what a person could not
// read as it is (control or invisible characters, bytes that are not
// UTF-8, fields the log shortened) and what the built-in floor forbids,
// checks each proposal by asking the gates of the changed policy to
// decide its records again, and writes the policy through the JSON and
// YAML encoders, then parses what it wrote as policy check does and
// refuses to print anything that does not give back what it meant. It
// never writes a file: the changed policy is printed, for a person to
// review (Diff) and commit.
package authoring
