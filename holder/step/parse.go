package step

import (
	"errors"
	"strconv"
	"time"
)

// ErrHelp is Parse's error for -h or --help: the caller prints the help.
var ErrHelp = errors.New("step: help asked for")

// DefaultGrace is --stop-timeout's default (sandbox.DefaultStopGrace).
const DefaultGrace = 10 * time.Second

// Flags are session exec's flags: each flag's name, its one-letter
// shorthand ("" for none) and whether it is a switch, which takes no
// value unless given as --name=VALUE (as cobra's bool flags). The
// command's help lists them (cmd/airlock registers them with cobra for
// that alone); TestFlagsAgree there checks that the two agree.
var Flags = []Flag{
	{Name: "tool"}, {Name: "approval"}, {Name: "json", Switch: true}, {Name: "result"},
	{Name: "quiet", Short: "q", Switch: true}, {Name: "env"}, {Name: "cwd"}, {Name: "timeout"},
	{Name: "stop-timeout"}, {Name: "help", Short: "h", Switch: true},
}

// Flag is one of Flags.
type Flag struct {
	Name, Short string
	Switch      bool
}

// Parse reads args, the command line after `session exec`, as cobra
// reads a command's flags (pflag's syntax and its errors): the session's
// id, flags anywhere before `--`, then the command. lookupEnv finds a
// bare --env NAME's value; a relative --result is made relative to dir,
// the client's working directory. Its errors are the command line's
// mistakes, but ErrHelp.
func Parse(args []string, lookupEnv func(string) (string, bool), dir string) (Request, error) {
	r := Request{Grace: DefaultGrace}
	var (
		pos         []string
		atDash      = -1
		help        bool
		env         []string
		timeout     float64
		grace       = DefaultGrace.Seconds()
		result, bad string
	)
	// set gives flag f value, or says why it cannot, as pflag does.
	set := func(f Flag, value string) string {
		var perr error
		switch f.Name {
		case "tool":
			r.Tool = value
		case "approval":
			r.Approval = value
		case "result":
			result = value
		case "env":
			env = append(env, value)
		case "cwd":
			r.Cwd = value
		case "timeout":
			timeout, perr = strconv.ParseFloat(value, 64)
		case "stop-timeout":
			grace, perr = strconv.ParseFloat(value, 64)
		case "json":
			r.JSON, perr = strconv.ParseBool(value)
		case "quiet":
			r.Quiet, perr = strconv.ParseBool(value)
		case "help":
			help, perr = strconv.ParseBool(value)
		}
		if perr != nil {
			name := "--" + f.Name
			if f.Short != "" {
				name = "-" + f.Short + ", " + name
			}
			return "invalid argument " + strconv.Quote(value) + " for " + strconv.Quote(name) + " flag: " + perr.Error()
		}
		return ""
	}
	for len(args) > 0 && atDash < 0 {
		s := args[0]
		args = args[1:]
		switch {
		case len(s) < 2 || s[0] != '-':
			pos = append(pos, s)
		case s == "--":
			atDash = len(pos)
			pos = append(pos, args...)
		case s[1] == '-':
			args, bad = long(s, args, set)
		default:
			bad = short(s, set)
		}
		if bad != "" {
			return Request{}, errors.New(bad)
		}
	}
	const prefix = "session exec: "
	switch {
	case help:
		return Request{}, ErrHelp
	case atDash != 1 || len(pos) < 2:
		return Request{}, errors.New(prefix + "give the session's id, then the command after --, e.g. airlock session exec ID --tool run_tests -- pytest -v")
	case r.Tool == "":
		return Request{}, errors.New(prefix + "--tool is required")
	case timeout < 0:
		return Request{}, errors.New(prefix + "--timeout must be positive")
	case grace < 0:
		return Request{}, errors.New(prefix + "--stop-timeout must be positive or 0")
	}
	var err error
	if r.Env, err = Env(env, lookupEnv); err != nil {
		return Request{}, errors.New(prefix + err.Error())
	}
	if result != "" && result != "-" && result[0] != '/' {
		if dir == "" || dir[0] != '/' {
			return Request{}, errors.New(prefix + "--result: a relative path, and the working directory is not known: give an absolute path")
		}
		result = dir + "/" + result
	}
	r.Session, r.Argv, r.Result = pos[0], pos[1:], result
	r.Timeout, r.Grace = time.Duration(timeout*float64(time.Second)), time.Duration(grace*float64(time.Second))
	return r, nil
}

// Env turns --env values into NAME=VALUE, looking up a bare NAME with
// lookupEnv (as docker run --env NAME does). `airlock run` reads its
// --env with it too.
func Env(flags []string, lookupEnv func(string) (string, bool)) ([]string, error) {
	var env []string
	for _, kv := range flags {
		name, value, ok := cut(kv, '=')
		if name == "" || index(kv, 0) >= 0 {
			return nil, errors.New("--env " + strconv.Quote(kv) + ": want NAME=VALUE or NAME")
		}
		if !ok {
			if value, ok = lookupEnv(name); !ok {
				return nil, errors.New("--env " + name + ": " + name + " is not set here")
			}
		}
		env = append(env, name+"="+value)
	}
	return env, nil
}

// UnknownFlag is the error of session command cmd ("exec") for a flag
// --name it does not have. A session's commands but start take its
// policy, not one of their own: --policy is told so.
func UnknownFlag(cmd, name string) string {
	if name == "policy" {
		return "unknown flag: --policy: session " + cmd + " runs under the policy its session started with (give --policy to session start)"
	}
	return "unknown flag: --" + name
}

// long parses s, a --flag, taking its value from args when it needs one;
// the error is "" when there is none.
func long(s string, args []string, set func(Flag, string) string) ([]string, string) {
	name := s[2:]
	if name == "" || name[0] == '-' || name[0] == '=' {
		return args, "bad flag syntax: " + s
	}
	name, value, given := cut(name, '=')
	f, ok := lookup(func(f Flag) bool { return f.Name == name })
	switch {
	case !ok:
		return args, UnknownFlag("exec", name)
	case given:
	case f.Switch:
		value = "true"
	case len(args) > 0:
		value, args = args[0], args[1:]
	default:
		return args, "flag needs an argument: --" + name
	}
	return args, set(f, value)
}

// short parses s, one or more shorthands after a dash (-q, -qh, -q=false).
// Every shorthand is a switch's.
func short(s string, set func(Flag, string) string) string {
	for shorts := s[1:]; shorts != ""; {
		c := shorts[0]
		f, ok := lookup(func(f Flag) bool { return f.Short == string(c) })
		if !ok {
			// pflag quotes the first byte of the UTF-8 of the rune c.
			r := rune(c)
			if c >= 0x80 {
				r = rune(0xc0 | c>>6)
			}
			return "unknown shorthand flag: " + strconv.QuoteRune(r) + " in -" + shorts
		}
		value, rest := "true", shorts[1:]
		if len(shorts) > 2 && shorts[1] == '=' {
			value, rest = shorts[2:], ""
		}
		if err := set(f, value); err != "" {
			return err
		}
		shorts = rest
	}
	return ""
}

func lookup(match func(Flag) bool) (Flag, bool) {
	for _, f := range Flags {
		if match(f) {
			return f, true
		}
	}
	return Flag{}, false
}

// cut is strings.Cut of a byte (not package strings, which Go initialises
// late: see the package doc).
func cut(s string, sep byte) (before, after string, found bool) {
	if i := index(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

func index(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
