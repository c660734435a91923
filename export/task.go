package export

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
)

// workDir is the container's working directory, the workspace, as in
// airlock's own sandbox: the command gate decides with it.
const workDir = "/workspace"

// Request names what to export.
type Request struct {
	// Tool is the tool scope whose caps apply and whose rules decide
	// Command.
	Tool string
	// Task is the egress task whose allowlist applies; "" allows no egress.
	Task string
	// Image is the container image, pinned by digest (NAME@sha256:HEX).
	Image string
	// Command is the command the container runs, decided at the command
	// gate now.
	Command []string
}

// Task is one tool and task of a policy, as every export reads it.
// Resolve makes it.
type Task struct {
	// Tool and TaskName are the request's.
	Tool, TaskName string
	// Caps are the tool's caps with every default applied.
	Caps policy.EffectiveCaps
	// Allowlist is the task's egress allowlist, parsed.
	Allowlist []egress.ParsedEntry
	// AllowlistRaw is the allowlist as written.
	AllowlistRaw []string
	// AlwaysBlocked are the policy's alwaysBlocked entries, parsed (the
	// built-in floor is egress.FloorPrefixes).
	AlwaysBlocked []egress.ParsedEntry
	// Image is the pinned image reference.
	Image name.Digest
	// Command is the command; Decision is the command gate's allow.
	Command  []string
	Decision decision.Decision
	// PolicySource and PolicyDigest name the policy exported.
	PolicySource, PolicyDigest string

	policy *policy.Policy
}

// Resolve reads the request's task out of the policy. It fails, with the
// reason, when the tool or task is not in the policy, when the image is
// not pinned by digest, or when the command gate does not allow the
// command.
func Resolve(pol *policy.Loaded, req Request) (*Task, error) {
	if _, ok := pol.ToolScopes[req.Tool]; !ok {
		return nil, fmt.Errorf("export: tool %q is not in the policy (it has: %s)", req.Tool, strings.Join(slices.Sorted(maps.Keys(pol.ToolScopes)), ", "))
	}
	cfg := pol.EgressConfig()
	raw, ok := cfg.TaskAllowlist[req.Task]
	if req.Task != "" && !ok {
		return nil, fmt.Errorf("export: task %q has no allowlist in the policy (omit --task for no egress)", req.Task)
	}
	t := &Task{Tool: req.Tool, TaskName: req.Task, Caps: pol.CapsFor(req.Tool), AllowlistRaw: raw,
		PolicySource: pol.Source, PolicyDigest: pol.Digest, policy: pol.Policy}
	for _, s := range raw {
		e, err := egress.ParseEntry(s)
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		t.Allowlist = append(t.Allowlist, e)
	}
	for _, s := range cfg.AlwaysBlocked {
		e, err := egress.ParseBlockedEntry(s)
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		t.AlwaysBlocked = append(t.AlwaysBlocked, e)
	}
	img, err := PinnedImage(req.Image)
	if err != nil {
		return nil, err
	}
	t.Image = img
	if len(req.Command) == 0 || req.Command[0] == "" {
		return nil, errors.New("export: name the command the container runs (after --): it is decided at the command gate now")
	}
	d := cmdgate.Compile(pol.Policy).Decide(req.Tool, req.Command[0], req.Command[1:], workDir)
	if d.Verdict != decision.Allow {
		return nil, fmt.Errorf("export: the command gate does not allow it: %s", d)
	}
	t.Command, t.Decision = slices.Clone(req.Command), d
	return t, nil
}

// PinnedImage parses an image reference that must carry a sha256 digest
// and name its registry (NAME@sha256:HEX, a tag allowed before the
// digest). A short name is refused: the runtime would resolve it through
// its configured search registries.
func PinnedImage(ref string) (name.Digest, error) {
	if !strings.Contains(ref, "@") {
		return name.Digest{}, fmt.Errorf("export: image %q is not pinned: give it by digest, NAME@sha256:<64 hex digits>", ref)
	}
	d, err := name.NewDigest(ref, name.StrictValidation)
	if err != nil {
		return name.Digest{}, fmt.Errorf("export: image %q: %w (want REGISTRY/NAME@sha256:<64 hex digits>)", ref, err)
	}
	if !strings.HasPrefix(d.DigestStr(), "sha256:") {
		return name.Digest{}, fmt.Errorf("export: image %q: the digest must be sha256", ref)
	}
	return d, nil
}

// CPUs is the processor rate that lets the command use its CPU time
// within its wall clock: cpuSeconds / wallSeconds, at least a
// hundredth of a CPU, in thousandths.
func (t *Task) CPUs() float64 {
	return math.Max(0.01, math.Ceil(1000*t.Caps.CPUSeconds/t.Caps.WallSeconds)/1000)
}

// WallSeconds is the wall-clock cap in whole seconds, rounded up.
func (t *Task) WallSeconds() int64 { return int64(math.Ceil(t.Caps.WallSeconds)) }

// CPUSeconds is the CPU-time cap in whole seconds, rounded up.
func (t *Task) CPUSeconds() int64 { return int64(math.Ceil(t.Caps.CPUSeconds)) }

// Policy is the policy the task was read from, as the exports carry it
// (PolicyJSON).
func (t *Task) Policy() *policy.Policy { return t.policy }
