// Package approval holds the answers to escalated commands: an `escalate`
// decision of the command gate yields a Request bound to one session (or
// run), one tool, the policy's digest and everything that decides what
// the command runs — the exact argv, the program it resolved to and that
// file's digest, the environment it adds, its working directory, its
// stdin, its egress task, workspace and image (Request.Bound); an
// Approver — a library callback, the operator's `airlock approve`, or an
// external decider program — answers it, shown all of these; and a
// command runs on an approval only once, only before it expires, and only
// when every bound field matches exactly (Store.Redeem, Request.Match).
// The contract is in docs/approvals.md.
package approval

import (
	"context"
	"errors"
	"time"
)

// Request is one escalated command waiting for an answer. Store.Create
// mints ID, Created and Expires; the caller fills in the rest from the
// command gate's decision.
type Request struct {
	// ID is minted by airlock: "apr-" and 32 hex digits of a random
	// 128-bit value. An ID that airlock did not mint is refused.
	ID string `json:"id"`
	// Session is the session's id, or the run's id for `airlock run`.
	Session string `json:"session"`
	// Tool is the agent tool that asked.
	Tool string `json:"tool"`
	// Argv is the command exactly as asked: the command, then its
	// arguments. An approval answers this argv and no other.
	Argv []string `json:"argv"`
	// Program is the file the command runs: the absolute path, inside
	// the sandbox, that the command resolved to (through the policy's
	// search path, never $PATH); ProgramDigest is the SHA-256 of its
	// contents when the request was made ("sha256:…").
	Program       string `json:"program"`
	ProgramDigest string `json:"programDigest"`
	// Env is what the command adds to its environment, NAME=VALUE,
	// exactly as asked and in its order (of two entries for one name,
	// the order decides which counts).
	Env []string `json:"env"`
	// Cwd is the command's working directory inside the sandbox,
	// absolute and clean.
	Cwd string `json:"cwd"`
	// Stdin is what the command reads on its standard input: StdinNone,
	// or the SHA-256 of its bytes ("sha256:…"), of which there are
	// StdinBytes.
	Stdin      string `json:"stdin"`
	StdinBytes int64  `json:"stdinBytes"`
	// Task is the egress task whose allowlist the command's network has.
	Task string `json:"task"`
	// Workspace is the real path of the host directory copied into
	// /workspace, "" for none; Image is the pinned image whose root file
	// system the command runs in, "" for the host's.
	Workspace string `json:"workspace,omitempty"`
	Image     string `json:"image,omitempty"`
	// PolicyDigest is the digest of the policy that escalated ("sha256:…");
	// an approval given under one policy is refused under another.
	PolicyDigest string `json:"policyDigest"`
	// Rule and Reason are the escalating rule's name and the gate's reason.
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// Justification is the rule's justification text from the policy, "" when none.
	Justification string `json:"justification,omitempty"`
	// Created and Expires bound the request's life; an answer or a
	// redemption after Expires is refused.
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// StdinNone is Request.Stdin for a command that reads nothing on its
// standard input (no stdin, or one that ends at once).
const StdinNone = "none"

// Answer is what an Approver said. The zero value is a denial.
type Answer struct {
	// Allow is true only for an explicit approval.
	Allow bool `json:"allow"`
	// By says who answered and how, for the audit stream: for example
	// "operator uid 1000 via airlock approve", "decider /usr/local/bin/ok",
	// "library callback", "MCP elicitation".
	By string `json:"by"`
	// Reason is the answerer's own words, "" when none were given.
	Reason string `json:"reason,omitempty"`
	// At is when the answer was given.
	At time.Time `json:"at"`
}

// Approver answers one request. It may block until a person decides, and
// must return when ctx is done. An error is not an answer: the command
// does not run.
type Approver interface {
	Approve(ctx context.Context, r Request) (Answer, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, r Request) (Answer, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, r Request) (Answer, error) { return f(ctx, r) }

// The reasons an approval is refused. Store.Redeem and Store.Answer
// return errors that match one of these with errors.Is.
var (
	// ErrUnknown: no request with that ID was minted by this store (a
	// forged or mistyped ID).
	ErrUnknown = errors.New("approval: no such request was minted")
	// ErrPending: the request has not been answered yet.
	ErrPending = errors.New("approval: the request has not been answered")
	// ErrAnswered: the request was answered already; an answer is given
	// once and never changed.
	ErrAnswered = errors.New("approval: the request was already answered")
	// ErrDenied: the request was answered with a denial.
	ErrDenied = errors.New("approval: the request was denied")
	// ErrUsed: the approval was already redeemed once (a replay).
	ErrUsed = errors.New("approval: the approval was already used")
	// ErrExpired: the request expired before it was answered or redeemed.
	ErrExpired = errors.New("approval: the request has expired")
	// ErrMismatch: a bound field — the command, its program,
	// environment, working directory or stdin, the tool, task,
	// workspace, image, session or policy — differs from the request's
	// (an altered request).
	ErrMismatch = errors.New("approval: the request was made for a different command")
	// ErrOutdated: the stored request was made by an older airlock,
	// whose approvals did not bind all that Request.Bound holds; it can
	// be neither answered nor redeemed.
	ErrOutdated = errors.New("approval: the request was made by an older airlock")
	// ErrTampered: the stored record does not carry a valid seal (it was
	// written or altered by something other than this store).
	ErrTampered = errors.New("approval: the stored record was altered")
)
