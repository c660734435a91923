package step

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func lookupEnv(name string) (string, bool) {
	if name == "SET" {
		return "from\xffhere", true
	}
	return "", false
}

// TestParse: what each command line becomes, or the error that says
// what is wrong with it (cmd/airlock's TestStepFlagsAgree checks the
// same command lines against cobra's reading).
func TestParse(t *testing.T) {
	base := Request{Session: "S", Tool: "t", Argv: []string{"true"}, Grace: DefaultGrace}
	with := func(f func(*Request)) Request {
		r := base
		f(&r)
		return r
	}
	for _, c := range []struct {
		args []string
		want Request
		err  string
	}{
		{args: []string{"S", "--tool", "t", "--", "true"}, want: base},
		{args: []string{"--tool=t", "S", "--", "true"}, want: base},
		{args: []string{"S", "--tool", "t", "--", "sh", "-c", "--tool x", "--"}, want: with(func(r *Request) { r.Argv = []string{"sh", "-c", "--tool x", "--"} })},
		{args: []string{"S", "--tool", "t", "--env", "A=1", "--env=B==2", "--env", "SET", "--", "true"},
			want: with(func(r *Request) { r.Env = []string{"A=1", "B==2", "SET=from\xffhere"} })},
		{args: []string{"S", "--tool", "t", "--json", "-q", "--result", "r.json", "--cwd", "sub", "--timeout", "1.5", "--stop-timeout=0", "--approval", "ap-1", "--", "true"},
			want: with(func(r *Request) {
				r.JSON, r.Quiet, r.Result, r.Cwd, r.Timeout, r.Grace, r.Approval = true, true, "/wd/r.json", "sub", 1500*time.Millisecond, 0, "ap-1"
			})},
		{args: []string{"S", "--tool", "t", "--json=false", "-q=false", "--result", "-", "--", "true"}, want: with(func(r *Request) { r.Result = "-" })},
		{args: []string{"S", "--tool", "a", "--tool", "t", "--", "true"}, want: base},
		{args: []string{"S", "--tool", "--", "--", "true"}, want: with(func(r *Request) { r.Tool = "--" })},
		{args: []string{"S", "--tool", "--", "x", "--", "true"}, err: "session exec: give the session's id"},
		{args: []string{"S", "--tool", "t", "-qq", "--", "true"}, want: with(func(r *Request) { r.Quiet = true })},
		{args: []string{"S", "--tool", "t", "--help", "--", "true"}, err: ErrHelp.Error()},
		{args: []string{"-h"}, err: ErrHelp.Error()},
		{args: []string{"-qh", "--bogus"}, err: "unknown flag: --bogus"},
		{args: []string{"S", "--tool", "t", "-e", "X", "--", "true"}, err: "unknown shorthand flag: 'e' in -e"},
		{args: []string{"S", "--tool", "t", "-qx", "--", "true"}, err: "unknown shorthand flag: 'x' in -x"},
		{args: []string{"S", "--no-such", "--", "true"}, err: "unknown flag: --no-such"},
		{args: []string{"S", "---tool", "--", "true"}, err: "bad flag syntax: ---tool"},
		{args: []string{"S", "--=t", "--", "true"}, err: "bad flag syntax: --=t"},
		{args: []string{"S", "--tool"}, err: "flag needs an argument: --tool"},
		{args: []string{"S", "--tool", "t", "--timeout", "soon", "--", "true"},
			err: `invalid argument "soon" for "--timeout" flag: strconv.ParseFloat: parsing "soon": invalid syntax`},
		{args: []string{"S", "--tool", "t", "-q=maybe", "--", "true"},
			err: `invalid argument "maybe" for "-q, --quiet" flag: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{args: []string{"S", "--tool", "t", "true"}, err: "session exec: give the session's id, then the command after --"},
		{args: []string{"S", "T", "--tool", "t", "--", "true"}, err: "session exec: give the session's id"},
		{args: []string{"--tool", "t", "--", "S", "true"}, err: "session exec: give the session's id"},
		{args: []string{"S", "--tool", "t", "--"}, err: "session exec: give the session's id"},
		{args: []string{"S", "--", "true"}, err: "session exec: --tool is required"},
		{args: []string{"S", "--tool", "t", "--timeout", "-1", "--", "true"}, err: "session exec: --timeout must be positive"},
		{args: []string{"S", "--tool", "t", "--stop-timeout", "-1", "--", "true"}, err: "session exec: --stop-timeout must be positive or 0"},
		{args: []string{"S", "--tool", "t", "--env", "=v", "--", "true"}, err: `session exec: --env "=v": want NAME=VALUE or NAME`},
		{args: []string{"S", "--tool", "t", "--env", "A=\x00", "--", "true"}, err: `session exec: --env "A=\x00": want NAME=VALUE or NAME`},
		{args: []string{"S", "--tool", "t", "--env", "UNSET", "--", "true"}, err: "session exec: --env UNSET: UNSET is not set here"},
	} {
		got, err := Parse(c.args, lookupEnv, "/wd")
		switch {
		case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
			t.Errorf("%q: %+v, %v; want the error %q", c.args, got, err, c.err)
		case c.err == "" && (err != nil || !reflect.DeepEqual(got, c.want)):
			t.Errorf("%q:\n %+v, %v\nwant\n %+v", c.args, got, err, c.want)
		}
	}
	if _, err := Parse([]string{"-h"}, lookupEnv, ""); !errors.Is(err, ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// TestParseResultPath: a relative --result is the client's, made absolute
// in its working directory, which must be known.
func TestParseResultPath(t *testing.T) {
	for dir, want := range map[string]string{"/home/u": "/home/u/sub/r.json", "": "", "rel": ""} {
		r, err := Parse([]string{"S", "--tool", "t", "--result", "sub/r.json", "--", "true"}, lookupEnv, dir)
		if r.Result != want || (want == "") != (err != nil) {
			t.Errorf("in %q: %q, %v; want %q", dir, r.Result, err, want)
		}
	}
}

// FuzzParse: any command line is read or refused, never a panic, and a
// command line read has a tool and a command.
func FuzzParse(f *testing.F) {
	f.Add("S\x00--tool\x00t\x00--\x00true")
	f.Add("-qh=\x00--env=A\x00--")
	f.Add("--json=\x00-\xff\x00--=\x00---")
	f.Fuzz(func(t *testing.T, line string) {
		r, err := Parse(strings.Split(line, "\x00"), lookupEnv, "/wd")
		if err == nil && (r.Tool == "" || len(r.Argv) == 0) {
			t.Fatalf("%q read as %+v", line, r)
		}
	})
}
