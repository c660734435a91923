package monitor

import (
	"strconv"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// Thresholds are the window rules' thresholds. A threshold below 1
// disables its rule.
type Thresholds struct {
	// EgressDenyBurst denied egress attempts within Window alert.
	EgressDenyBurst int
	// CommandDenyRepeat denied commands within Window alert.
	CommandDenyRepeat int
	// Window is the sliding window of both rules.
	Window time.Duration
}

// DefaultThresholds returns the thresholds of a policy without a monitor
// section (policy.DefaultEgressDenyBurst and the others).
func DefaultThresholds() Thresholds {
	return ThresholdsFor(&policy.Policy{})
}

// ThresholdsFor returns the thresholds of p's monitor section, with the
// policy package's defaults for what it leaves out.
func ThresholdsFor(p *policy.Policy) Thresholds {
	m := p.MonitorConfig()
	return Thresholds{
		EgressDenyBurst:   int(m.EgressDenyBurst),
		CommandDenyRepeat: int(m.CommandDenyRepeat),
		Window:            time.Duration(m.WindowSeconds * float64(time.Second)),
	}
}

// seconds writes d as a number of seconds, "60s", "2.5s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
