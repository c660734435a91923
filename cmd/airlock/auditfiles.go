package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/spf13/cobra"
)

// logFiles reads several files of one rotated log as one stream, and
// tells which file a line of the stream is in.
type logFiles struct {
	names []string
	files []*os.File
	at    int
	lines int   // lines read so far
	first []int // the stream's line number of each file's first line
}

// openFiles opens the files, in order.
func openFiles(names []string) (*logFiles, error) {
	r := &logFiles{names: names}
	for i, n := range names {
		f, _, err := hostfile.Open(n) // a FIFO neither hangs nor is read
		if err != nil {
			r.at = i
			r.Close()
			return r, err
		}
		r.files = append(r.files, f)
	}
	r.first = []int{1}
	return r, nil
}

// Read reads the files one after the other, counting lines.
func (r *logFiles) Read(p []byte) (int, error) {
	for r.at < len(r.files) {
		n, err := r.files[r.at].Read(p)
		r.lines += bytes.Count(p[:n], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			r.at++
			if r.at < len(r.files) {
				r.first = append(r.first, r.lines+1)
			}
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
	return 0, io.EOF
}

// current names the file being read.
func (r *logFiles) current() string { return r.names[min(r.at, len(r.names)-1)] }

// locate returns the file and its own line number of the stream's line n.
func (r *logFiles) locate(n int) (string, int) {
	i := len(r.first) - 1
	for i > 0 && r.first[i] > n {
		i--
	}
	return r.names[i], n - r.first[i] + 1
}

// Close closes the files.
func (r *logFiles) Close() error {
	for _, f := range r.files {
		f.Close()
	}
	return nil
}

func newAuditRotateCmd() *cobra.Command {
	var keyFile string
	cmd := &cobra.Command{
		Use:   "rotate [--key-file FILE] [FILE]",
		Short: "Move the audit log to FILE.N and continue its chain and tree in a new FILE",
		Long: `rotate moves the audit log to FILE.N, N its last seq, and starts a new FILE whose
first line carries on the chain (its prev is the last line's hash) and the
Merkle tree (its frontier), in one atomic swap: every airlock process writing
the log follows it at its next record. A checkpoint is signed just before and
just after. Keep the rotated files beside the log: "airlock audit verify
FILE.N FILE" checks them as one log, and proofs of their records need them.`,
		Args: atMostOneFile("rotate"),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, l, err := openSigned("rotate", args, keyFile)
			if err != nil {
				return err
			}
			defer l.Close()
			rotated, err := l.Rotate()
			if err != nil {
				return auditFailed("rotate", file, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: rotated to %s; the log continues in %s\n", file, rotated, file)
			return nil
		},
	}
	keyFileFlag(cmd, &keyFile)
	return cmd
}
