package policy

import (
	"time"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/limits"
)

// The defaults PRODUCT.md gives for absent fields (the seed's caps).
const (
	DefaultCPUSeconds   = 10
	DefaultMemoryMB     = 512
	DefaultProcessCount = 20
	DefaultDiskWriteMB  = 100
	DefaultOpenFiles    = 256
	// DefaultOutputMB bounds a run's stdout and stderr together: far
	// more than a test run or an install prints, far less than an agent
	// harness should hold in memory (docs/sandbox.md, "Caps").
	DefaultOutputMB = 16
	// DefaultEgressDenyBurst and the other monitor defaults: five denied
	// egress attempts or three denied commands within a minute alert.
	DefaultEgressDenyBurst   = 5
	DefaultCommandDenyRepeat = 3
	DefaultWindowSeconds     = 60
)

// DefaultCommandSearchPath is where bare command names are resolved when
// the policy does not say.
var DefaultCommandSearchPath = []string{"/usr/local/bin", "/usr/bin", "/bin"}

// DefaultReadOnly is the host paths bound read-only into the sandbox when
// the policy does not say: the system's programs, libraries and
// configuration. Paths missing on a host are skipped.
var DefaultReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"}

// EffectiveCaps are resource caps with every default applied.
type EffectiveCaps struct {
	WallSeconds  float64 `json:"wallSeconds"`
	CPUSeconds   float64 `json:"cpuSeconds"`
	MemoryMB     int64   `json:"memoryMb"`
	ProcessCount int64   `json:"processCount"`
	DiskWriteMB  int64   `json:"diskWriteMb"`
	OpenFiles    int64   `json:"openFiles"`
	OutputMB     int64   `json:"outputMb"`
}

// CapsFor returns the caps of a run of tool: the tool's own caps, field by
// field over the top-level caps, over the defaults. wallSeconds defaults
// to the effective cpuSeconds.
func (p *Policy) CapsFor(tool string) EffectiveCaps {
	c := EffectiveCaps{
		CPUSeconds:   DefaultCPUSeconds,
		MemoryMB:     DefaultMemoryMB,
		ProcessCount: DefaultProcessCount,
		DiskWriteMB:  DefaultDiskWriteMB,
		OpenFiles:    DefaultOpenFiles,
		OutputMB:     DefaultOutputMB,
	}
	wall := 0.0
	for _, layer := range []*Caps{p.Caps, p.ToolScopes[tool].Caps} {
		if layer == nil {
			continue
		}
		setF(&wall, layer.WallSeconds)
		setF(&c.CPUSeconds, layer.CPUSeconds)
		setI(&c.MemoryMB, layer.MemoryMB)
		setI(&c.ProcessCount, layer.ProcessCount)
		setI(&c.DiskWriteMB, layer.DiskWriteMB)
		setI(&c.OpenFiles, layer.OpenFiles)
		setI(&c.OutputMB, layer.OutputMB)
	}
	c.WallSeconds = wall
	if wall == 0 {
		c.WallSeconds = c.CPUSeconds
	}
	return c
}

// FilesystemFor returns the filesystem view of a run of tool: the tool's
// own view when it has one, else the top-level one, else the default.
func (p *Policy) FilesystemFor(tool string) Filesystem {
	if fs := p.ToolScopes[tool].Filesystem; fs != nil {
		return *fs
	}
	if p.Filesystem != nil {
		return *p.Filesystem
	}
	return Filesystem{ReadOnly: DefaultReadOnly}
}

// SearchPath returns the policy's command search path or the default.
func (p *Policy) SearchPath() []string {
	if len(p.CommandSearchPath) > 0 {
		return p.CommandSearchPath
	}
	return DefaultCommandSearchPath
}

// EffectiveMonitor is the monitor's thresholds with defaults applied.
type EffectiveMonitor struct {
	EgressDenyBurst   int64
	CommandDenyRepeat int64
	WindowSeconds     float64
}

// MonitorConfig returns the monitor thresholds with defaults applied.
func (p *Policy) MonitorConfig() EffectiveMonitor {
	m := EffectiveMonitor{DefaultEgressDenyBurst, DefaultCommandDenyRepeat, DefaultWindowSeconds}
	if p.Monitor != nil {
		setI(&m.EgressDenyBurst, p.Monitor.EgressDenyBurst)
		setI(&m.CommandDenyRepeat, p.Monitor.CommandDenyRepeat)
		setF(&m.WindowSeconds, p.Monitor.WindowSeconds)
	}
	return m
}

func setF(dst *float64, v *float64) {
	if v != nil {
		*dst = *v
	}
}

func setI(dst *int64, v *int64) {
	if v != nil {
		*dst = *v
	}
}

// EgressConfig returns the egress section in the egress gate's terms.
func (p *Policy) EgressConfig() egress.Config {
	if p.Egress == nil {
		return egress.Config{}
	}
	return egress.Config{TaskAllowlist: p.Egress.TaskAllowlist, AlwaysBlocked: p.Egress.AlwaysBlocked}
}

// Limits returns the caps in the limits package's terms.
func (c EffectiveCaps) Limits() limits.Caps {
	return limits.Caps{
		Wall:           time.Duration(c.WallSeconds * float64(time.Second)),
		CPU:            time.Duration(c.CPUSeconds * float64(time.Second)),
		MemoryBytes:    c.MemoryMB << 20,
		Tasks:          c.ProcessCount,
		DiskWriteBytes: c.DiskWriteMB << 20,
		OpenFiles:      c.OpenFiles,
		OutputBytes:    c.OutputMB << 20,
	}
}
