package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// VMRSS reads a process's resident set size from /proc.
func VMRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// SamplePeakRSS samples pid's resident memory every 50 ms from now on;
// stop ends the sampling and returns the peak (at least from).
func SamplePeakRSS(t *testing.T, pid int, from int64) (stop func() int64) {
	var peak atomic.Int64
	peak.Store(from)
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
				if r := VMRSS(t, pid); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	return func() int64 {
		close(done)
		<-sampled
		return peak.Load()
	}
}
