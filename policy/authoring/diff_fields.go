package authoring

import (
	"reflect"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/policy"
)

// diffCredentials finds credentials b adds, or adds to more tasks,
// hosts, methods or paths, than a.
func diffCredentials(c *changes, a, b *policy.Policy) {
	if b.Egress == nil {
		return
	}
	var old []policy.Credential
	if a.Egress != nil {
		old = a.Egress.Credentials
	}
	for _, n := range b.Egress.Credentials {
		subject := "credential " + n.Name
		i := slices.IndexFunc(old, func(o policy.Credential) bool { return o.Name == n.Name })
		if i < 0 {
			c.add(KindCredentialWidened, subject, "", "a credential %s does not have, for %s", c.a, n.Host)
			continue
		}
		o := old[i]
		if n.Host != o.Host {
			c.add(KindCredentialWidened, subject, "", "now for %s (%s: %s)", n.Host, c.a, o.Host)
		}
		if len(o.Tasks) > 0 && (len(n.Tasks) == 0 || !subset(n.Tasks, o.Tasks)) {
			c.add(KindCredentialWidened, subject, "", "for more tasks: %s (%s: %s)", orAll(n.Tasks, "every task"), c.a, strings.Join(o.Tasks, ", "))
		}
		if len(o.Methods) > 0 && (len(n.Methods) == 0 || !subset(n.Methods, o.Methods)) {
			c.add(KindCredentialWidened, subject, "", "for more methods: %s (%s: %s)", orAll(n.Methods, "every method"), c.a, strings.Join(o.Methods, ", "))
		}
		oldPaths := slices.Concat(o.Paths, o.PathPrefixes)
		if len(oldPaths) > 0 && (len(n.Paths)+len(n.PathPrefixes) == 0 || !subset(n.Paths, o.Paths) || !subset(n.PathPrefixes, o.PathPrefixes)) {
			c.add(KindCredentialWidened, subject, "", "for more paths: %s (%s: %s)", orAll(slices.Concat(n.Paths, n.PathPrefixes), "every path"), c.a, strings.Join(oldPaths, ", "))
		}
	}
}

func subset(xs, of []string) bool {
	for _, x := range xs {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return true
}

func orAll(xs []string, all string) string {
	if len(xs) == 0 {
		return all
	}
	return strings.Join(xs, ", ")
}

// diffLimits finds caps and budgets b raises (or removes) over a.
func diffLimits(c *changes, a, b *policy.Policy) {
	for _, tool := range sortedKeys(b.ToolScopes) {
		capsRaised(c, "tool "+tool, a.CapsFor(tool), b.CapsFor(tool))
	}
	capsRaised(c, "session", a.SessionCaps(), b.SessionCaps())
	if a.Egress != nil {
		for _, task := range sortedKeys(a.Egress.Budgets) {
			var nb *policy.Budget
			if b.Egress != nil {
				if x, ok := b.Egress.Budgets[task]; ok {
					nb = &x
				}
			}
			ob := a.Egress.Budgets[task]
			diffBudget(c, "budget of task "+task, &ob, nb)
		}
	}
	if a.Session != nil && a.Session.Egress != nil {
		var nb *policy.Budget
		if b.Session != nil {
			nb = b.Session.Egress
		}
		diffBudget(c, "budget of the session", a.Session.Egress, nb)
	}
}

// capsRaised finds the caps of cb, effective caps (policy.EffectiveCaps,
// policy.EffectiveSession), that it raises over ca: every field, in
// order, named by its JSON name, so that no cap is left out.
func capsRaised[T any](c *changes, subject string, ca, cb T) {
	va, vb := reflect.ValueOf(ca), reflect.ValueOf(cb)
	for i := range va.NumField() {
		name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("json"), ",")
		x, y := va.Field(i).Convert(reflect.TypeFor[float64]()).Float(), vb.Field(i).Convert(reflect.TypeFor[float64]()).Float()
		if y > x {
			c.add(KindCapRaised, subject, "", "%s %v (%s: %v)", name, y, c.a, x)
		}
	}
}

// diffBudget finds the caps of budget o that n raises or removes (n nil:
// the budget is gone).
func diffBudget(c *changes, subject string, o, n *policy.Budget) {
	if n == nil {
		n = &policy.Budget{}
	}
	diffBudgetLimits(c, subject, o.Limits(), n.Limits())
	for _, h := range sortedKeys(o.Hosts) {
		diffBudgetLimits(c, subject+" for "+h, o.Hosts[h], n.Hosts[h])
	}
}

func diffBudgetLimits(c *changes, subject string, o, n policy.BudgetLimits) {
	for _, name := range []string{"bytesOut", "bytesIn", "requests", "connections", "concurrentConnections"} {
		ov, nv := capOf(o, name), capOf(n, name)
		switch {
		case ov == nil:
		case nv == nil:
			c.add(KindBudgetRaised, subject, "", "%s has no cap (%s: %d)", name, c.a, *ov)
		case *nv > *ov:
			c.add(KindBudgetRaised, subject, "", "%s %d (%s: %d)", name, *nv, c.a, *ov)
		}
	}
}

// diffRest compares the fields that are lists of names or paths.
func diffRest(c *changes, a, b *policy.Policy) {
	for _, r := range a.Require {
		if !slices.Contains(b.Require, r) {
			c.add(KindRequireDropped, "require", "", "%s is no longer required", r)
		}
	}
	for _, m := range b.WeakerModes {
		if !slices.Contains(a.WeakerModes, m) {
			c.add(KindWeakerMode, "weakerModes", "", "%s is accepted", m)
		}
	}
	for _, tool := range sortedKeys(b.ToolScopes) {
		fa, fb := a.FilesystemFor(tool), b.FilesystemFor(tool)
		for _, p := range fb.ReadWrite {
			if !under(p, fa.ReadWrite) {
				c.add(KindFilesystemWidened, "tool "+tool, "", "%s is writable", p)
			}
		}
		for _, p := range fb.ReadOnly {
			if !under(p, slices.Concat(fa.ReadOnly, fa.ReadWrite)) {
				c.add(KindFilesystemWidened, "tool "+tool, "", "%s is shown", p)
			}
		}
	}
	for _, dir := range b.SearchPath() {
		if !slices.Contains(a.SearchPath(), dir) {
			c.add(KindSearchPath, "commandSearchPath", "", "bare command names are also resolved in %s", dir)
		}
	}
	if a.Egress != nil {
		for _, e := range a.Egress.AlwaysBlocked {
			if b.Egress == nil || !slices.Contains(b.Egress.AlwaysBlocked, e) {
				c.add(KindBlockDropped, "alwaysBlocked", "", "%s is no longer always blocked (the built-in floor still is)", e)
			}
		}
	}
	if b.Approvals != nil && len(b.Approvals.Decider) > 0 && (a.Approvals == nil || !slices.Equal(a.Approvals.Decider, b.Approvals.Decider)) {
		c.add(KindApprovalDecider, "approvals", "", "escalations are answered by %s", strings.Join(b.Approvals.Decider, " "))
	}
}

// under reports whether p is one of dirs or lies under one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}
