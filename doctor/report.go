package doctor

// Strength is how well this host can enforce a control.
type Strength string

// The strengths.
const (
	// Strong: the kernel enforces the control with the mechanism airlock
	// is designed around.
	Strong Strength = "strong"
	// Weak: a fallback enforces part of it (for example an rlimit per
	// process instead of a cgroup for the whole tree).
	Weak Strength = "weak"
	// Missing: nothing on this host enforces it.
	Missing Strength = "missing"
)

// Names of the controls that are facts about the host more than
// mechanisms; a policy may require them too (RequirementNames), so that
// every name the report shows can be required.
const (
	ControlPrivileges = RequirePrivileges
	ControlOpenFiles  = RequireOpenFiles
)

// Control is one control as this host offers it.
type Control struct {
	// Name is the control's name, which is the name a policy's require
	// list gives it (see RequirementNames).
	Name string `json:"name"`
	// Mechanism is what enforces it here, e.g. "cgroup v1 memory.limit_in_bytes".
	Mechanism string `json:"mechanism"`
	// Strength is how well it is enforced.
	Strength Strength `json:"strength"`
	// Detail is what was found, and why a control is weak or missing.
	Detail string `json:"detail,omitempty"`
	// Fix is what an operator can do about a weak or missing control.
	Fix string `json:"fix,omitempty"`
}

// Host identifies what the report is about.
type Host struct {
	// OS and Arch are Go's names for the system and the architecture.
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// Kernel is the kernel's release, e.g. "6.18.4".
	Kernel string `json:"kernel,omitempty"`
	// UID is the effective uid the checks ran as.
	UID int `json:"uid"`
	// Root reports whether they ran as root.
	Root bool `json:"root"`
	// Container names the container runtime found, "" for none.
	Container string `json:"container,omitempty"`
}

// Report is what Check found: one Control per control, in a fixed order.
type Report struct {
	Host     Host      `json:"host"`
	Controls []Control `json:"controls"`
}

// Control returns the control with the given name.
func (r Report) Control(name string) (Control, bool) {
	for _, c := range r.Controls {
		if c.Name == name {
			return c, true
		}
	}
	return Control{}, false
}
