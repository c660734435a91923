package audit

import (
	"bufio"
	"errors"
	"io"
)

// ErrLineTooLong is matched (errors.Is) by the error for a line over
// MaxLineBytes from Events.
var ErrLineTooLong = errors.New(reasonTooLong)

// lineReader reads '\n'-terminated lines of at most max bytes. It is
// hand-written rather than a bufio.Scanner because it must keep a partial
// last line across io.EOF (for --follow, where the line is still being
// written) and tell a line over the limit from the end of the input.
type lineReader struct {
	br  *bufio.Reader
	max int
	acc []byte // the partial line read so far
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next complete line without its newline; the slice is
// valid until the following call. At the end of the input it returns
// io.EOF, with any partial line read so far (kept: a later call continues
// it if the input grows). A line longer than max is ErrLineTooLong, and the
// reader must not be used again.
func (lr *lineReader) next() ([]byte, error) {
	for {
		chunk, err := lr.br.ReadSlice('\n')
		n := len(lr.acc) + len(chunk)
		if err == nil {
			n-- // the newline
		}
		if n > lr.max {
			return nil, ErrLineTooLong
		}
		switch {
		case err == nil && len(lr.acc) == 0:
			return chunk[:len(chunk)-1], nil
		case err == nil:
			lr.acc = append(lr.acc, chunk...)
			line := lr.acc[:len(lr.acc)-1]
			lr.acc = lr.acc[:0]
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.acc = append(lr.acc, chunk...)
		case errors.Is(err, io.EOF):
			lr.acc = append(lr.acc, chunk...)
			return lr.acc, io.EOF
		default:
			return nil, err
		}
	}
}
