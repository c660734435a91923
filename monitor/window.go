package monitor

import "time"

// mark is one counted event.
type mark struct {
	ts  time.Time
	seq uint64
}

// window counts events within a sliding time window.
type window struct {
	n     int
	width time.Duration
	marks []mark
}

// add counts an event at ts. When that makes n events less than width
// apart, it returns their seqs and starts counting again from zero.
func (w *window) add(ts time.Time, seq uint64) []uint64 {
	if w.n < 1 {
		return nil
	}
	keep := w.marks[:0]
	for _, m := range w.marks {
		if ts.Sub(m.ts) < w.width {
			keep = append(keep, m)
		}
	}
	w.marks = append(keep, mark{ts, seq})
	if len(w.marks) < w.n {
		return nil
	}
	seqs := make([]uint64, len(w.marks))
	for i, m := range w.marks {
		seqs[i] = m.seq
	}
	w.reset()
	return seqs
}

func (w *window) reset() { w.marks = w.marks[:0] }
