package sandbox

import (
	"io"
	"os"
	"strings"
	"sync"
)

// stepIO is one step's standard streams: pipes whose child ends go to
// the init, copied to and from the Step's reader and writers.
type stepIO struct {
	child   [3]*os.File // stdin read end, stdout and stderr write ends
	inW     *os.File
	outR    [2]*os.File
	stdin   io.Reader
	outputs [2]io.Writer
	wg      sync.WaitGroup
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
			io.Copy(p.outputs[i], p.outR[i])
		}()
	}
}

// wait waits for the output copies (every writer is dead once the step
// and what it left have been killed) and stops the input copy.
func (p *stepIO) wait() {
	p.inW.Close()
	p.wg.Wait()
}

func (p *stepIO) close() {
	for _, f := range append(p.child[:], p.inW, p.outR[0], p.outR[1]) {
		if f != nil {
			f.Close()
		}
	}
}
