package sandbox

import (
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// copyWait is how long the output copies are waited for once every
// process inside is dead, as os/exec's WaitDelay: a caller's writer that
// blocks for good (a pipe nobody reads) must hold neither the run's end
// nor a session's stop for ever.
const copyWait = 2 * time.Second

// stepIO is one step's standard streams: pipes whose child ends go to
// the init, copied to and from the Step's reader and writers.
type stepIO struct {
	child   [3]*os.File // stdin read end, stdout and stderr write ends
	inW     *os.File
	outR    [2]*os.File
	stdin   io.Reader
	outputs [2]io.Writer
	wg      sync.WaitGroup
	// abandoned is set when the copies outlived copyWait: what they
	// still read is dropped.
	abandoned atomic.Bool
}

// newStepIO makes the step's pipes; its output goes through oc, the
// step's output cap.
func newStepIO(st Step, oc *outputCap) (*stepIO, error) {
	p := &stepIO{stdin: st.Stdin}
	if p.stdin == nil {
		p.stdin = strings.NewReader("")
	}
	outputs := [2]io.Writer{st.Stdout, st.Stderr}
	for i, w := range outputs {
		if w == nil {
			outputs[i] = io.Discard
		}
	}
	p.outputs[0], p.outputs[1] = oc.writers(outputs[0], outputs[1])
	var err error
	if p.child[0], p.inW, err = os.Pipe(); err != nil {
		return nil, err
	}
	n := 2
	if p.outputs[0] == p.outputs[1] {
		n = 1 // one writer, one pipe, as os/exec does: no interleaved copies
	}
	for i := range n {
		if p.outR[i], p.child[i+1], err = os.Pipe(); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

func (p *stepIO) childFDs() []int {
	errFD := p.child[1]
	if p.child[2] != nil {
		errFD = p.child[2]
	}
	return []int{int(p.child[0].Fd()), int(p.child[1].Fd()), int(errFD.Fd())}
}

// start closes the child ends (the init has its copies) and copies.
func (p *stepIO) start() {
	for i, f := range p.child {
		if f != nil {
			f.Close()
		}
		p.child[i] = nil
	}
	go func() {
		io.Copy(p.inW, p.stdin)
		p.inW.Close()
	}()
	for i := range 2 {
		if p.outR[i] == nil {
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			io.Copy(dropAfter{p.outputs[i], &p.abandoned}, p.outR[i])
		}()
	}
}

// wait waits for the output copies (every writer is dead once the step
// and what it left have been killed), at most copyWait, and stops the
// input copy. A copy stuck in its writer past that is abandoned: the
// write it is in is its last.
func (p *stepIO) wait() {
	p.inW.Close()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(copyWait):
		p.abandoned.Store(true)
		for _, r := range p.outR {
			if r != nil {
				r.Close() // its copy ends at its next read
			}
		}
	}
}

// dropAfter passes writes on to w until abandoned is set.
type dropAfter struct {
	w         io.Writer
	abandoned *atomic.Bool
}

func (d dropAfter) Write(b []byte) (int, error) {
	if d.abandoned.Load() {
		return len(b), nil
	}
	return d.w.Write(b)
}

func (p *stepIO) close() {
	for _, f := range append(p.child[:], p.inW, p.outR[0], p.outR[1]) {
		if f != nil {
			f.Close()
		}
	}
}
