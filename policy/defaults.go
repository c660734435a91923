package policy

import (
	"time"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/limits"
)

// The defaults for absent fields (docs/policy.md, "The file"): the
// seed lab's caps (docs/README.md, "Words").
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
		set(&wall, layer.WallSeconds)
		set(&c.CPUSeconds, layer.CPUSeconds)
		set(&c.MemoryMB, layer.MemoryMB)
		set(&c.ProcessCount, layer.ProcessCount)
		set(&c.DiskWriteMB, layer.DiskWriteMB)
		set(&c.OpenFiles, layer.OpenFiles)
		set(&c.OutputMB, layer.OutputMB)
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
		set(&m.EgressDenyBurst, p.Monitor.EgressDenyBurst)
		set(&m.CommandDenyRepeat, p.Monitor.CommandDenyRepeat)
		set(&m.WindowSeconds, p.Monitor.WindowSeconds)
	}
	return m
}

// set sets *dst to *v when the field v is set.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// EgressConfig returns the egress section in the egress gate's terms.
func (p *Policy) EgressConfig() egress.Config {
	if p.Egress == nil {
		return egress.Config{}
	}
	cfg := egress.Config{TaskAllowlist: map[string][]string{}, AlwaysBlocked: p.Egress.AlwaysBlocked}
	for task, entries := range p.Egress.TaskAllowlist {
		hosts := make([]string, len(entries))
		for i, e := range entries {
			hosts[i] = e.Host
			if e.short {
				continue
			}
			if cfg.Entries == nil {
				cfg.Entries = map[string]map[string]egress.EntryConfig{}
			}
			if cfg.Entries[task] == nil {
				cfg.Entries[task] = map[string]egress.EntryConfig{}
			}
			cfg.Entries[task][e.Host] = e.config()
		}
		cfg.TaskAllowlist[task] = hosts
	}
	for _, c := range p.Egress.Credentials {
		cfg.Credentials = append(cfg.Credentials, egress.CredentialConfig{Name: c.Name, Host: c.Host, Tasks: c.Tasks,
			Methods: c.Methods, Paths: c.Paths, PathPrefixes: c.PathPrefixes})
	}
	return cfg
}

// CredentialFiles lists the files credentials' values are read from:
// no sandbox may see them (nor a workspace hold one, since it is copied).
func (p *Policy) CredentialFiles() []string {
	return p.credentialSources(func(c Credential) string { return c.FromFile })
}

// CredentialEnv lists the variables the credentials' values are read
// from (fromEnv): a process that reads them for airlock, a session's
// holder, needs these of its caller's environment.
func (p *Policy) CredentialEnv() []string {
	return p.credentialSources(func(c Credential) string { return c.FromEnv })
}

// credentialSources lists what source gives of each credential, but "".
func (p *Policy) credentialSources(source func(Credential) string) []string {
	var out []string
	if p.Egress != nil {
		for _, c := range p.Egress.Credentials {
			if s := source(c); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// config is e's options in the egress gate's terms.
func (e AllowEntry) config() egress.EntryConfig {
	c := egress.EntryConfig{Inspect: e.Inspect, UpstreamCA: e.UpstreamCA, Protocol: egress.Protocol(e.Protocol)}
	for _, r := range e.Rules {
		c.Rules = append(c.Rules, egress.RuleConfig{Name: r.Name, Deny: r.Action == "deny", Methods: r.Methods,
			Paths: r.Paths, PathPrefixes: r.PathPrefixes, Query: r.Query, Headers: r.Headers, WebSocket: r.WebSocket})
	}
	return c
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
