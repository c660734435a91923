package enforcer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/cmdgate"
)

// MaxApprovalStdin bounds the stdin of an escalated command: it is read
// whole before the approval is asked for or redeemed, so that the
// approval is bound to its digest and the command then reads exactly
// those bytes (docs/approvals.md, "What an approval is bound to").
const MaxApprovalStdin = 1 << 20

// bind reads what an escalated command's approval is bound to beyond its
// tool, argv, scope and policy, and its task, workspace and image: the
// program it runs (its path inside the sandbox, and its contents' digest,
// or WorkspaceProgram for a workspace program, which only the sandbox's
// init finds), the environment it adds, its working directory and its
// stdin. The stdin is read whole here, and the command reads those bytes
// instead; the notices say so when it has not ended after a second.
func (a *attempt) bind(ctx context.Context) error {
	digest := WorkspaceProgram
	if a.cmd.tree == "" {
		var err error
		if digest, err = a.e.programDigest(a.rootfs, a.cmd.path); err != nil {
			return fmt.Errorf("the program %s, whose identity an approval is bound to: %w", a.cmd.path, err)
		}
	}
	in, err := readStdin(ctx, a.t, a.st.Stdin)
	if err != nil {
		return err
	}
	b := &a.bound
	b.Program, b.ProgramDigest, b.Env, b.Cwd, b.Stdin = a.cmd.path, digest, append([]string{}, a.st.Env...), a.st.Cwd, approval.StdinNone
	a.st.Stdin = nil
	if len(in) == 0 {
		return nil
	}
	sum := sha256.Sum256(in)
	b.Stdin, b.StdinBytes = "sha256:"+hex.EncodeToString(sum[:]), int64(len(in))
	a.st.Stdin = bytes.NewReader(in)
	return nil
}

// WorkspaceProgram is the program digest of an approval for a workspace
// program: its path is bound, its contents are not (they are the
// agent's, and only the sandbox's init finds the file, as the step
// starts: docs/policy.md, "Workspace programs").
const WorkspaceProgram = "none: a workspace program, the agent's own"

// programDigest is the SHA-256 of the program at path, the file the
// sandbox will run: the host file a bind provides there, else the file
// in the image's root, else the host's.
func (e *Enforcer) programDigest(rootfs, path string) (string, error) {
	var f *os.File
	var err error
	if b, ok := e.bindAt(path); ok {
		f, err = os.Open(b.Host)
	} else {
		f, err = cmdgate.Open(rootfs, path)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", errors.Join(err, errors.New("not a regular file"))
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// readStdin reads r to its end, at most MaxApprovalStdin bytes; nil r is
// no stdin. It returns when ctx ends, leaving the reader to whoever
// closes it.
func readStdin(ctx context.Context, t *tally, r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, MaxApprovalStdin+1))
		done <- read{b, err}
	}()
	slow := time.NewTimer(time.Second)
	defer slow.Stop()
	for {
		select {
		case rd := <-done:
			switch {
			case rd.err != nil:
				return nil, fmt.Errorf("reading the stdin an approval is bound to: %w", rd.err)
			case len(rd.b) > MaxApprovalStdin:
				return nil, fmt.Errorf("the command needs an approval, which is bound to its stdin, and its stdin has more than %d bytes: "+
					"give the input as a file in the workspace instead", MaxApprovalStdin)
			}
			return rd.b, nil
		case <-slow.C:
			if t.notices != nil {
				t.notices.Printf("airlock: approval: the command needs an approval, which is bound to its stdin: reading its stdin to the end (at most %d bytes; </dev/null gives none)", MaxApprovalStdin)
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("reading the stdin an approval is bound to: %w", ctx.Err())
		}
	}
}
