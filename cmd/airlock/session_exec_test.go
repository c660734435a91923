package main

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/airlock-sandbox/airlock/holder/step"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// cobraStep reads args, a command line after `session exec`, as cobra
// reads the flags the command's help lists (pflag), with the checks the
// command ran on them when cobra read them: what step.Parse must agree
// with.
func cobraStep(args []string) (step.Request, error) {
	cmd := newSessionExecCmd()
	cmd.InitDefaultHelpFlag()
	fs := cmd.Flags()
	if err := fs.Parse(args); err != nil {
		return step.Request{}, err
	}
	if help, _ := fs.GetBool("help"); help {
		return step.Request{}, step.ErrHelp
	}
	var (
		r   step.Request
		out resultFlags
	)
	r.Tool, _ = fs.GetString("tool")
	r.Approval, _ = fs.GetString("approval")
	out.json, _ = fs.GetBool("json")
	out.quiet, _ = fs.GetBool("quiet")
	out.result, _ = fs.GetString("result")
	out.env = fs.Lookup("env").Value.(pflag.SliceValue).GetSlice() // not GetStringArray, which loses a lone ""
	out.cwd, _ = fs.GetString("cwd")
	out.timeout, _ = fs.GetFloat64("timeout")
	out.grace, _ = fs.GetFloat64("stop-timeout")
	pos := fs.Args()
	switch {
	case fs.ArgsLenAtDash() != 1 || len(pos) < 2:
		return step.Request{}, errors.New("session exec: give the session's id, then the command after --, e.g. airlock session exec ID --tool run_tests -- pytest -v")
	case r.Tool == "":
		return step.Request{}, errors.New("session exec: --tool is required")
	}
	if err := out.check("session exec"); err != nil {
		return step.Request{}, err
	}
	env, err := step.Env(out.env, lookupTestEnv)
	if err != nil {
		return step.Request{}, errors.New("session exec: " + err.Error())
	}
	if out.result != "" && out.result != "-" && !strings.HasPrefix(out.result, "/") {
		out.result = "/wd/" + out.result
	}
	r.Session, r.Argv, r.Env, r.Cwd = pos[0], pos[1:], env, out.cwd
	r.JSON, r.Quiet, r.Result = out.json, out.quiet, out.result
	r.Timeout, r.Grace = out.timeoutDuration(), time.Duration(out.grace*float64(time.Second))
	return r, nil
}

func lookupTestEnv(name string) (string, bool) {
	if name == "SET" {
		return "v", true
	}
	return "", false
}

// checkStepFlags fails t unless step.Parse reads args as cobra does: the
// same step, or the same error.
func checkStepFlags(t *testing.T, args []string) {
	t.Helper()
	want, werr := cobraStep(args)
	got, err := step.Parse(args, lookupTestEnv, "/wd")
	switch {
	case (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error():
		t.Errorf("%q: step.Parse says %v, cobra %v", args, err, werr)
	case !reflect.DeepEqual(got, want):
		t.Errorf("%q: step.Parse reads\n %+v\ncobra\n %+v", args, got, want)
	}
}

// TestStepFlagsAgree: session exec's flags are read by step.Parse, as its
// quick client reads them; cobra has them for the help. The help lists
// exactly the flags step.Parse reads, and both read every command line
// alike: the same step, or the same error.
func TestStepFlagsAgree(t *testing.T) {
	cmd := newSessionExecCmd()
	cmd.InitDefaultHelpFlag()
	var listed []step.Flag
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		listed = append(listed, step.Flag{Name: f.Name, Short: f.Shorthand, Switch: f.NoOptDefVal != ""})
	})
	cmp := func(a, b step.Flag) int { return strings.Compare(a.Name, b.Name) }
	parsed := slices.SortedFunc(slices.Values(step.Flags), cmp)
	if slices.SortFunc(listed, cmp); !slices.Equal(listed, parsed) {
		t.Errorf("the help lists %+v, step.Parse reads %+v", listed, parsed)
	}
	if def, _ := cmd.Flags().GetFloat64("stop-timeout"); step.DefaultGrace != sandbox.DefaultStopGrace || def != step.DefaultGrace.Seconds() {
		t.Errorf("--stop-timeout's default: %v in the help, %v read, sandbox's %v", def, step.DefaultGrace, sandbox.DefaultStopGrace)
	}
	for _, line := range []string{
		"S --tool t -- true",
		"--tool=t S -- true",
		"S --tool t -- sh -c --tool -- -q",
		"S --tool t --env A=1 --env=B==2 --env SET --env=SET -- true",
		"S --tool t --json -q --result r.json --cwd sub --timeout 1.5 --stop-timeout=0 --approval ap-1 -- true",
		"S --tool t --json=false --json=TRUE -q=0 --result - -- true",
		"S --tool a --tool t --cwd x --cwd y --timeout 1 --timeout 2 -- true",
		"S --tool -- -- true",
		"S --tool -- x -- true",
		"S --tool t -qq -- true",
		"S --tool t -qh -- true",
		"S --tool t --help=false -- true",
		"S --tool t --help -- true",
		"-h",
		"--help --bogus",
		"-qh --bogus",
		"S --tool t -e X -- true",
		"S --tool t -qx -- true",
		"S --tool t -q= -- true",
		"S --tool t -\xff -- true",
		"S --no-such -- true",
		"S --no-such=1 -- true",
		"S ---tool -- true",
		"S --=t -- true",
		"S --tool",
		"S --env",
		"S --tool t --timeout soon -- true",
		"S --tool t --timeout=1e3 --stop-timeout=0x10 -- true",
		"S --tool t --json=maybe -- true",
		"S --tool t -q=maybe -- true",
		"S --tool t --json= -- true",
		"S --tool t true",
		"S T --tool t -- true",
		"--tool t -- S true",
		"S --tool t --",
		"S -- true",
		"S --tool= -- true",
		"S --tool t --timeout -1 -- true",
		"S --tool t --stop-timeout -1 -- true",
		"S --tool t --env =v -- true",
		"S --tool t --env= -- true",
		"S --tool t --env UNSET -- true",
		"- --tool t -- true",
		" --tool t -- true",
		"",
	} {
		checkStepFlags(t, strings.Split(line, " "))
	}
	checkStepFlags(t, []string{"S", "--tool", "t", "--env", "A=\x00", "--", "true"})
	checkStepFlags(t, nil)
}

// FuzzStepFlagsAgree: any command line is read by step.Parse as cobra
// reads it. (One quirk of pflag's is not kept: it skips a shorthand group
// that starts with "test.", which go test's flags would be, and step.Parse
// refuses it.)
func FuzzStepFlagsAgree(f *testing.F) {
	f.Add("S\x00--tool\x00t\x00--\x00true")
	f.Add("S\x00-qh=1\x00--env=A\x00--tool\x00t\x00--\x00x")
	f.Add("--json=\x00-\xff\x00--=\x00---")
	f.Fuzz(func(t *testing.T, line string) {
		if strings.Contains(line, "test.") {
			t.Skip()
		}
		checkStepFlags(t, strings.Split(line, "\x00"))
	})
}
