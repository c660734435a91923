package runbook

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/internal/strict"
)

// planChecks are the validation rules run on every plan, in order; each
// reports every problem of its concern, and ParsePlan attaches the
// positions.
var planChecks = []func(p *Plan) []*PlanError{
	checkTestID,
	checkDescription,
	checkSteps,
	checkTask,
}

func validatePlan(p *Plan) PlanErrors {
	var errs PlanErrors
	for _, c := range planChecks {
		errs = append(errs, c(p)...)
	}
	return errs
}

// testIDRE is the schema's pattern for testId: it goes into audit events
// and file names, so it is kept to a safe alphabet.
var testIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

func checkTestID(p *Plan) []*PlanError {
	switch {
	case p.TestID == "":
		return []*PlanError{strict.Problem("testId", "missing or empty testId", `name the test run, e.g. "testId": "T-2024-001"`)}
	case len(p.TestID) > 128 || !testIDRE.MatchString(p.TestID):
		return []*PlanError{strict.Problem("testId", fmt.Sprintf("testId %q: use 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit", p.TestID), "")}
	}
	return nil
}

func checkDescription(p *Plan) []*PlanError {
	if len(p.Description) > 4096 || !utf8.ValidString(p.Description) {
		return []*PlanError{strict.Problem("description", "description is not UTF-8 text of at most 4096 bytes", "")}
	}
	return nil
}

func checkSteps(p *Plan) []*PlanError {
	if len(p.Steps) == 0 {
		return []*PlanError{strict.Problem("steps", "a plan needs at least one step",
			`add a step, e.g. {"tool": "run_tests", "command": "pytest"}`)}
	}
	if len(p.Steps) > MaxSteps {
		return []*PlanError{strict.Problem("steps", fmt.Sprintf("a plan may hold at most %d steps, this one has more than %d steps", MaxSteps, MaxSteps),
			"split it into several plans")}
	}
	var errs []*PlanError
	names := map[string]int{}
	for i, s := range p.Steps {
		at := fmt.Sprintf("steps[%d]", i)
		if s.Name != "" {
			if !strict.PlainText(s.Name) || len(s.Name) > 128 {
				errs = append(errs, strict.Problem(at+".name", "name must be plain text of at most 128 bytes, without control characters or surrounding spaces", ""))
			} else if j, dup := names[s.Name]; dup {
				errs = append(errs, strict.Problem(at+".name", fmt.Sprintf("name %q is also the name of steps[%d]", s.Name, j), "give every step its own name"))
			}
			names[s.Name] = i
		}
		if s.Tool == "" {
			errs = append(errs, strict.Problem(at, "missing or empty tool", "name the agent tool whose scope decides this command"))
		} else if !strict.Name(s.Tool) || len(s.Tool) > 128 {
			errs = append(errs, strict.Problem(at+".tool", "tool must be a name of at most 128 bytes, without white space or control characters", ""))
		}
		switch {
		case s.Command == "":
			errs = append(errs, strict.Problem(at, "missing or empty command", "name the command to run"))
		case strings.ContainsRune(s.Command, 0) || !utf8.ValidString(s.Command):
			errs = append(errs, strict.Problem(at+".command", "command holds a NUL byte or is not UTF-8", ""))
		}
		for j, a := range s.Args {
			if strings.ContainsRune(a, 0) || !utf8.ValidString(a) {
				errs = append(errs, strict.Problem(fmt.Sprintf("%s.args[%d]", at, j), "argument holds a NUL byte or is not UTF-8", ""))
			}
		}
	}
	return errs
}

// checkTask requires a task when the steps use more than one tool: with
// one tool the task defaults to its name, as "airlock run" does, but with
// several any default would be a guess about which allowlist applies.
func checkTask(p *Plan) []*PlanError {
	if p.Task != "" {
		if !strict.Name(p.Task) || len(p.Task) > 128 {
			return []*PlanError{strict.Problem("task", "task must be a name of at most 128 bytes, without white space or control characters", "")}
		}
		return nil
	}
	for _, s := range p.Steps[min(1, len(p.Steps)):] {
		if s.Tool != p.Steps[0].Tool {
			return []*PlanError{strict.Problem("steps", fmt.Sprintf("the steps use several tools (%q, %q) and the plan names no task", p.Steps[0].Tool, s.Tool),
				`add "task": the egress allowlist the proxy applies to every step`)}
		}
	}
	return nil
}

// EffectiveTask is the egress task of the plan: Task, or the one tool's
// name when Task is empty.
func (p *Plan) EffectiveTask() string {
	if p.Task != "" || len(p.Steps) == 0 {
		return p.Task
	}
	return p.Steps[0].Tool
}
