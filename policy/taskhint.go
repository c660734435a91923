package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/strict"
)

// TaskHint is what to say of task when allowlists (a policy's
// egress.taskAllowlist) has none for it: the nearest task there when one
// is near (a typo), and the tasks there. It is "" when task has an
// allowlist, an empty one included (refusing everything is then a
// choice).
func TaskHint(allowlists map[string][]string, task string) string {
	if _, ok := allowlists[task]; ok {
		return ""
	}
	tasks := slices.Sorted(maps.Keys(allowlists))
	if len(tasks) == 0 {
		return "the policy has no egress.taskAllowlist"
	}
	hint := "its tasks: " + strings.Join(tasks, ", ")
	if best := strict.Closest(task, tasks); best != "" {
		hint = fmt.Sprintf("did you mean %q? (%s)", best, hint)
	}
	return hint
}
