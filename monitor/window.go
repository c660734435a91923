package monitor

import "time"

// mark is one counted record: n events (a count record stands for
// several, audit's coalescing).
type mark struct {
	ts  time.Time
	seq uint64
	n   int
}

// window counts events within a sliding time window.
type window struct {
	n     int
	width time.Duration
	marks []mark
}

// add counts n events recorded at ts in the record seq. When that makes
// w.n events less than width apart, it returns the seqs of their records
// and how many events they hold, and starts counting again from zero.
func (w *window) add(ts time.Time, seq uint64, n int) ([]uint64, int) {
	if w.n < 1 {
		return nil, 0
	}
	keep := w.marks[:0]
	total := 0
	for _, m := range w.marks {
		if ts.Sub(m.ts) < w.width {
			keep = append(keep, m)
			total += m.n
		}
	}
	w.marks = append(keep, mark{ts, seq, max(n, 1)})
	total += max(n, 1)
	if total < w.n {
		return nil, 0
	}
	seqs := make([]uint64, len(w.marks))
	for i, m := range w.marks {
		seqs[i] = m.seq
	}
	w.reset()
	return seqs, total
}

func (w *window) reset() { w.marks = w.marks[:0] }
