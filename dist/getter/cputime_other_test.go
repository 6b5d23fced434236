//go:build !unix

package getter

import "time"

var cpuStart = time.Now()

// cpuTime falls back to wall time where getrusage is not available.
func cpuTime() time.Duration { return time.Since(cpuStart) }
