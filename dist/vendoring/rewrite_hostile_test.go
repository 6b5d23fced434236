package vendoring

import (
	"runtime"
	"strings"
	"testing"
)

// MaxCalls sources in one 8 MiB file (tfconfig.MaxFileSize) are rewritten
// in one pass: the allocations stay a small multiple of the file, not one
// copy of it per source.
func TestRewriteLargeFileOnePass(t *testing.T) {
	var b strings.Builder
	srcs := map[string]string{}
	for i := range MaxCalls {
		b.WriteString("module \"m" + itoa(i) + "\" {\n  source = \"git::https://h.example/x.git\"\n}\n")
		srcs["m"+itoa(i)] = "./.airgap/modules/" + strings.Repeat("0", 64) + "/sub"
	}
	src := []byte(b.String() + strings.Repeat("# "+strings.Repeat("x", 100)+"\n", (8<<20-b.Len())/103))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := Rewrite(src, "a.tf", srcs)
	runtime.ReadMemStats(&after)
	if err != nil || strings.Count(string(out), "./.airgap/modules/") != MaxCalls {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32*uint64(len(src)) {
		t.Errorf("rewriting %d sources in %d bytes allocated %d MiB", MaxCalls, len(src), alloc>>20)
	}
}
