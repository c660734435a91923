package sandbox

import (
	"errors"
	"fmt"
	"os"

	"github.com/airlock-sandbox/airlock/limits"
)

// stepGroup is one step's own group (limits.Child) and the tasks files of
// its cgroup v1 directories, which the init moves its main thread through
// to fork the step there (docs/sessions.md, "Each step").
type stepGroup struct {
	child *limits.Child
	enter []*os.File
	err   error
}

// newStepGroup makes step n's group, without its caps yet.
func (ss *Session) newStepGroup(n int) stepGroup {
	child, err := ss.sb.group.NewChild(fmt.Sprintf("step-%d", n))
	if err != nil {
		return stepGroup{err: err}
	}
	dirs, _ := child.Dirs()
	enter, err := openTasks(dirs)
	if err != nil {
		child.Delete()
		return stepGroup{err: err}
	}
	return stepGroup{child: child, enter: enter}
}

// release closes the files and removes the group: the step's processes
// are gone by then (limits.Child.Delete kills any that are not, and the
// session's teardown removes what is left).
func (g stepGroup) release() {
	closeFiles(g.enter)
	if g.child != nil {
		g.child.Delete()
	}
}

// takeStepGroup returns step n's group: the one made while the last step
// ran, else a new one.
func (ss *Session) takeStepGroup(n int) stepGroup {
	if ss.sb.next != nil {
		g := <-ss.sb.next
		ss.sb.next = nil
		if g.err == nil {
			return g
		}
	}
	return ss.newStepGroup(n)
}

// makeStepGroup makes step n's group in the background, while the step
// before it runs, and limits it with that step's caps (a session's steps
// are mostly by one tool): the step's own Limit, once the one before has
// ended, then measures again and writes only what changed.
func (ss *Session) makeStepGroup(n int, caps limits.ChildCaps) chan stepGroup {
	made := make(chan stepGroup, 1)
	go func() {
		g := ss.newStepGroup(n)
		if g.err == nil {
			g.child.Limit(caps)
		}
		made <- g
	}()
	return made
}

// dropNextGroup removes the group made for a step that will not run.
func (ss *Session) dropNextGroup() {
	if ss.sb.next != nil {
		(<-ss.sb.next).release()
		ss.sb.next = nil
	}
	closeFiles(ss.sb.back)
	ss.sb.back = nil
}

// placeFiles are the tasks files a step's exec request carries: the step
// group's, then the session group's, one per v1 hierarchy in the same
// order (none without a v1 child). The session's are opened once.
func (ss *Session) placeFiles(g stepGroup) ([]*os.File, error) {
	if len(g.enter) == 0 {
		return nil, nil
	}
	if ss.sb.back == nil {
		_, parents := g.child.Dirs()
		back, err := openTasks(parents)
		if err != nil {
			return nil, err
		}
		ss.sb.back = back
	}
	if len(ss.sb.back) != len(g.enter) {
		return nil, errors.New("sandbox: the step's group and the session's differ in hierarchies")
	}
	return append(append([]*os.File(nil), g.enter...), ss.sb.back...), nil
}

// stepReceipt is how a step's memory and tasks caps held: the step's own
// mechanism, then the session's, which holds too.
func (ss *Session) stepReceipt(child *limits.Child) map[string]string {
	r := child.Receipt()
	sess := ss.sb.group.Receipt()
	for _, k := range []string{limits.ControlMemory, limits.ControlTasks} {
		r[k] = "per step: " + r[k] + "; per session: " + sess[k]
	}
	return r
}
