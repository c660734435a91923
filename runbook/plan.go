package runbook

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// PlanError is a problem in a plan file, located by line and column:
// ParsePlan returns one for a file that does not parse.
type PlanError = strict.Error

// PlanErrors is every rule a parsed plan breaks, in file order.
type PlanErrors = strict.Errors

// MaxPlanBytes is the largest plan file airlock reads. A plan of a
// thousand steps with long argument lists is well under it; the cap keeps
// a hostile file from exhausting memory.
const MaxPlanBytes = 1 << 20

// MaxSteps is the most steps one plan may hold.
const MaxSteps = 1000

// Plan is a test plan: the steps that one sandbox runs, in order, in one
// workspace. The JSON Schema in schemas/plan.schema.json is generated
// from these types.
type Plan struct {
	// TestID names the test run: the sandbox_launched event and every
	// other event of the run carry it.
	TestID string `json:"testId" jsonschema:"required,minLength=1,maxLength=128,pattern=^[A-Za-z0-9][A-Za-z0-9._:-]*$"`
	// Description says what the plan tests, for the people reading the
	// audit trail. It changes nothing.
	Description string `json:"description,omitempty" jsonschema:"maxLength=4096"`
	// Task names the egress allowlist the proxy applies to every step.
	// It may be left out only when every step uses the same tool; the
	// task is then that tool's name, as for "airlock run".
	Task string `json:"task,omitempty" jsonschema:"minLength=1,maxLength=128"`
	// Steps run in order; a plan needs at least one.
	Steps []Step `json:"steps" jsonschema:"required,minItems=1,maxItems=1000"`
}

// Step is one command of a plan, asked for by an agent tool.
type Step struct {
	// Name names the step in the audit trail and the result; it must be
	// unique within the plan. Left out, the step is named by its number.
	Name string `json:"name,omitempty" jsonschema:"minLength=1,maxLength=128"`
	// Tool is the agent tool asking; its scope in the policy decides the
	// command, as for "airlock run --tool".
	Tool string `json:"tool" jsonschema:"required,minLength=1,maxLength=128"`
	// Command is what to run: a bare name, resolved through the policy's
	// commandSearchPath only, or an absolute path.
	Command string `json:"command" jsonschema:"required,minLength=1"`
	// Args are the command's arguments.
	Args []string `json:"args,omitempty"`
	// ContinueOnFailure lets the plan go on when this step exits with a
	// non-zero status or is killed by a cap. It never lets the plan go on
	// after a refusal or a suspected escape.
	ContinueOnFailure bool `json:"continueOnFailure,omitempty"`
}

// Label returns the step's name, or "step N" (1-based) when it has none.
func (s Step) Label(i int) string {
	if s.Name != "" {
		return s.Name
	}
	return fmt.Sprintf("step %d", i+1)
}

// LoadPlan reads, parses and validates the plan file at path, which must
// be a regular file: a FIFO or a device is refused without blocking.
func LoadPlan(path string) (*Plan, error) {
	data, err := hostfile.ReadFile(path, MaxPlanBytes)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return ParsePlan(path, data)
}

// ParsePlan parses data as a plan named name (used in errors). Parsing is
// strict: an unknown or misspelt field, a wrong type, a null, a duplicate
// key, trailing data or a file over MaxPlanBytes is a *PlanError at its
// line and column; a plan that parses but breaks a rule returns
// PlanErrors, each positioned. Nothing about the plan is guessed.
func ParsePlan(name string, data []byte) (*Plan, error) {
	var p Plan
	where, err := strict.Decode("plan", data, false, MaxPlanBytes, &p)
	if err != nil {
		return nil, strict.InFile(err, name)
	}
	if errs := validatePlan(&p); len(errs) > 0 {
		where.Place(errs, name)
		return nil, errs
	}
	return &p, nil
}
