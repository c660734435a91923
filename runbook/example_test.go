package runbook_test

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/runbook"
)

// A plan is parsed strictly: a misspelt field is an error at its line
// and column, with a hint.
func ExampleParsePlan() {
	p, err := runbook.ParsePlan("plan.json", []byte(`{
  "testId": "T-1",
  "steps": [
    {"name": "deps", "tool": "install_deps", "command": "pip", "args": ["install", "-r", "requirements.txt"]},
    {"name": "tests", "tool": "run_tests", "command": "pytest", "args": ["-v"], "continueOnFailure": true}
  ],
  "task": "install_deps"
}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, s := range p.Steps {
		fmt.Println(s.Label(i), s.Tool, s.Command, s.Args)
	}
	fmt.Println("egress task:", p.EffectiveTask())

	_, err = runbook.ParsePlan("typo.json", []byte(`{"testId": "T-2", "steps": [{"tool": "t", "comand": "ls"}]}`))
	fmt.Println(err)
	// Output:
	// deps install_deps pip [install -r requirements.txt]
	// tests run_tests pytest [-v]
	// egress task: install_deps
	// typo.json:1:43: steps[0].comand: unknown field "comand"
	// 	hint: did you mean "command"?
}
