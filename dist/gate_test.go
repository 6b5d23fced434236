package dist

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// nestedSARIF is a SARIF log with one error and, in the run's property
// bag, a value nested depth levels deep.
func nestedSARIF(depth int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":"2.1.0","runs":[{"properties":`)
	b.WriteString(strings.Repeat("[", depth))
	b.WriteString(strings.Repeat("]", depth))
	b.WriteString(`,"results":[{"level":"error"}]}]}`)
	return b.Bytes()
}

// TestCountSARIFDepth: a value nested up to MaxSARIFDepth is skipped; one
// deeper is not SARIF, and refusing 8 million levels costs next to no
// memory (json.Decoder keeps a word per open level: it cost 350 MiB).
func TestCountSARIFDepth(t *testing.T) {
	if f, ok := CountSARIF(bytes.NewReader(nestedSARIF(MaxSARIFDepth))); !ok || f.Error != 1 {
		t.Errorf("nested %d deep: %v %v, want SARIF with one error", MaxSARIFDepth, f, ok)
	}
	if _, ok := CountSARIF(bytes.NewReader(nestedSARIF(MaxSARIFDepth + 1))); ok {
		t.Errorf("nested %d deep: counted as SARIF", MaxSARIFDepth+1)
	}
	bomb := nestedSARIF(8 << 20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, ok := CountSARIF(bytes.NewReader(bomb))
	runtime.ReadMemStats(&after)
	if ok {
		t.Error("nested 8 million deep: counted as SARIF")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("refusing it allocated %d MiB", grew>>20)
	}
}
