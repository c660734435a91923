package authoring

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
)

// The kinds of a Change: the fixed vocabulary of policy diff
// (docs/policy.md, "Reviewing a change"), in the order it reports them.
const (
	// KindNewTool is a tool OLD has no scope for, whose rules NEW lets run.
	KindNewTool = "new-tool"
	// KindNewCommand is a command of a tool that no rule of OLD let run.
	KindNewCommand = "new-command"
	// KindShellRule is a rule that lets a shell run a script given with
	// -c.
	KindShellRule = "shell-rule"
	// KindWorkspaceProgram is a rule for a program under a tree the
	// sandbox writes (/workspace, /tmp, a readWrite path).
	KindWorkspaceProgram = "workspace-program"
	// KindWiderSignature is a command line of a command OLD had rules
	// for: allowExtraArgs set, a shorter prefix, or a new signature.
	KindWiderSignature = "wider-signature"
	// KindDenyDropped is a command line a deny rule of OLD refused.
	KindDenyDropped = "deny-dropped"
	// KindEscalationDropped is a command line OLD escalated and NEW
	// allows without approval.
	KindEscalationDropped = "escalation-dropped"
	// KindNewHost is a destination named exactly (a name or a public
	// address) that OLD refused.
	KindNewHost = "new-host"
	// KindNewWildcard is a destination reached through "*.suffix" or
	// "*".
	KindNewWildcard = "new-wildcard"
	// KindPrivateReach is an address that is not public (private,
	// loopback, the host's own, ...) that OLD refused.
	KindPrivateReach = "private-reach"
	// KindInspectionDropped is an entry whose requests OLD decided by
	// rules and NEW carries unread.
	KindInspectionDropped = "inspection-dropped"
	// KindNewMethod is a method on an inspected host that no request of
	// OLD could use.
	KindNewMethod = "new-method"
	// KindNewPath is a request on an inspected host, of a method OLD
	// allowed elsewhere, that OLD refused.
	KindNewPath = "new-path"
	// KindCredentialWidened is a credential added, or added to more
	// tasks, hosts, methods or paths.
	KindCredentialWidened = "credential-widened"
	// KindCapRaised is a tool's or the session's cap raised.
	KindCapRaised = "cap-raised"
	// KindBudgetRaised is an egress budget's cap raised or removed.
	KindBudgetRaised = "budget-raised"
	// KindRequireDropped is a require name NEW no longer has.
	KindRequireDropped = "require-dropped"
	// KindWeakerMode is a weaker mode NEW accepts.
	KindWeakerMode = "weaker-mode"
	// KindFilesystemWidened is a host path a tool's sandbox sees, or may
	// write, that OLD did not show it.
	KindFilesystemWidened = "filesystem-widened"
	// KindSearchPath is a directory where NEW resolves bare command
	// names.
	KindSearchPath = "search-path"
	// KindBlockDropped is an alwaysBlocked entry NEW no longer has.
	KindBlockDropped = "block-dropped"
	// KindApprovalDecider is an approval decider NEW adds or changes.
	KindApprovalDecider = "approval-decider"
)

// Kinds is the vocabulary, in the order policy diff reports it.
var Kinds = []string{KindNewTool, KindNewCommand, KindShellRule, KindWorkspaceProgram, KindWiderSignature,
	KindDenyDropped, KindEscalationDropped, KindNewHost, KindNewWildcard, KindPrivateReach, KindInspectionDropped,
	KindNewMethod, KindNewPath, KindCredentialWidened, KindCapRaised, KindBudgetRaised, KindRequireDropped,
	KindWeakerMode, KindFilesystemWidened, KindSearchPath, KindBlockDropped, KindApprovalDecider}

// Change is one thing one policy allows that another does not.
type Change struct {
	// Kind is one of Kinds.
	Kind string `json:"kind"`
	// Subject is where: "tool run_tests", "task ci", "session".
	Subject string `json:"subject"`
	// What says what is allowed, and by which rule or entry.
	What string `json:"what"`
}

// Difference is what NEW allows that OLD does not, and the reverse.
type Difference struct {
	// Widens lists what NEW allows that OLD does not.
	Widens []Change `json:"widens"`
	// Narrows lists what OLD allows that NEW does not.
	Narrows []Change `json:"narrows"`
}

// Diff compares two policies by asking their own gates: every command
// line and destination that tells their rules apart (each signature
// exactly, and followed by an argument no rule names; each entry's
// host, a name under each wildcard, the first address of each range and
// the one past its end, on every port either names and one neither
// does; each method, and a path and query from each rule, on the
// entries both inspect) is decided under both, and a verdict NEW gives
// that OLD does not is a widening, named by its kind. Caps, budgets,
// credentials, require, weaker modes, the filesystem, the search path,
// alwaysBlocked and the decider are compared field by field. The
// narrowings are the widenings of OLD over NEW.
func Diff(old, new *policy.Policy) (*Difference, error) {
	w, err := widenings(old, new, "OLD")
	if err != nil {
		return nil, err
	}
	n, err := widenings(new, old, "NEW")
	if err != nil {
		return nil, err
	}
	return &Difference{Widens: w, Narrows: n}, nil
}

// widenings lists what b allows that a does not; aName names a in what
// they say ("OLD").
func widenings(a, b *policy.Policy, aName string) ([]Change, error) {
	// The host's own addresses are loopback and unspecified only: the
	// difference must not depend on where it is computed.
	da, err := newDecider(a, egress.FixedAddrs{})
	if err != nil {
		return nil, err
	}
	db, err := newDecider(b, egress.FixedAddrs{})
	if err != nil {
		return nil, err
	}
	c := &changes{a: aName, seen: map[string]bool{}}
	diffCommands(c, a, b, da, db)
	diffEgress(c, a, b, da, db)
	diffCredentials(c, a, b)
	diffLimits(c, a, b)
	diffRest(c, a, b)
	slices.SortStableFunc(c.list, func(x, y Change) int {
		return cmp.Or(cmp.Compare(slices.Index(Kinds, x.Kind), slices.Index(Kinds, y.Kind)), cmp.Compare(x.Subject, y.Subject))
	})
	return c.list, nil
}

// changes gathers Changes, once for each kind, subject and key.
type changes struct {
	a    string // the policy compared against, as what they say names it
	list []Change
	seen map[string]bool
}

// add adds a change, unless one of its kind, subject and key was added
// (key "": its text).
func (c *changes) add(kind, subject, key, format string, args ...any) {
	ch := Change{Kind: kind, Subject: subject, What: fmt.Sprintf(format, args...)}
	if key == "" {
		key = ch.What
	}
	if k := kind + "\x00" + subject + "\x00" + key; !c.seen[k] {
		c.seen[k] = true
		c.list = append(c.list, ch)
	}
}
