package sandbox

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// copyWait is how long the output copies are waited for once every
// process inside is dead, as os/exec's WaitDelay: a caller's writer that
// blocks for good (a pipe nobody reads) must hold neither the run's end
// nor a session's stop for ever.
const copyWait = 2 * time.Second

// copyBufs are the buffers a step's output copies read through: one of
// 32 KiB made for each stream of each step was most of what a session
// allocated per step, and its garbage collections' cause.
var copyBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// stepIO is one step's standard streams: pipes whose child ends go to
// the init, copied to and from the Step's reader and writers.
type stepIO struct {
	child   [3]*os.File // stdin read end, stdout and stderr write ends
	inW     *os.File
	outR    [2]*os.File
	stdin   io.Reader
	outputs [2]io.Writer
	// copies counts the output copies running; the last to end closes
	// copied.
	copies atomic.Int32
	copied chan struct{}
	// abandoned is set when the copies outlived copyWait: what they
	// still read is dropped.
	abandoned atomic.Bool
}

// newStepIO makes the step's pipes; its output goes through oc, the
// step's output cap.
func newStepIO(st Step, oc *outputCap) (*stepIO, error) {
	p := &stepIO{stdin: st.Stdin}
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
	if p.stdin == nil {
		p.inW.Close() // no input: the step reads an end of file at once
	} else {
		go func() {
			io.Copy(p.inW, p.stdin)
			p.inW.Close()
		}()
	}
	p.copied = make(chan struct{})
	for i := range 2 {
		if p.outR[i] != nil {
			p.copies.Add(1)
		}
	}
	for i := range 2 {
		if p.outR[i] == nil {
			continue
		}
		go func() {
			buf := copyBufs.Get().(*[32 << 10]byte)
			// The reader wrapped: an *os.File's WriteTo would copy
			// through a buffer of its own, made for every copy.
			io.CopyBuffer(dropAfter{p.outputs[i], &p.abandoned}, struct{ io.Reader }{p.outR[i]}, buf[:])
			copyBufs.Put(buf)
			if p.copies.Add(-1) == 0 {
				close(p.copied)
			}
		}()
	}
}

// wait waits for the output copies (every writer is dead once the step
// and what it left have been killed), at most copyWait, and stops the
// input copy. A copy stuck in its writer past that is abandoned: the
// write it is in is its last.
func (p *stepIO) wait() {
	p.inW.Close()
	if p.copied == nil {
		return // never started
	}
	t := time.NewTimer(copyWait)
	defer t.Stop()
	select {
	case <-p.copied:
	case <-t.C:
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
