package dist_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
)

// TestCheckHCLTokens: a file of one-byte tokens is refused before it is
// parsed, naming the file, with a hint; real configuration of the densest
// kinds, as big as generators write it, passes, and its count is close to
// the scanner's.
func TestCheckHCLTokens(t *testing.T) {
	for name, src := range map[string][]byte{
		"lines.tf":     bytes.Repeat([]byte("a\n"), 2<<20),
		"attrs.tf":     bytes.Repeat([]byte("a=1\n"), dist.MaxHCLTokens/4+1),
		"commas.tf":    append([]byte("a = ["), bytes.Repeat([]byte(","), dist.MaxHCLTokens)...),
		"list.tf.json": append([]byte(`{"a":[`), bytes.Repeat([]byte("1,"), dist.MaxHCLTokens/2)...),
		"\x1b[2Jx.tf":  bytes.Repeat([]byte("["), dist.MaxHCLTokens+1),
	} {
		_, err := dist.CheckHCLTokens(src, name)
		if !errors.Is(err, dist.ErrHCLTooManyTokens) || !strings.Contains(err.Error(), dist.Printable(name)+" has up to") || !strings.Contains(err.Error(), "\nhint: ") {
			t.Errorf("%s (%d bytes): %v", dist.Printable(name), len(src), err)
		}
		if strings.Contains(err.Error(), "\x1b") {
			t.Errorf("the message has the file name's control characters: %q", err)
		}
		if _, err := dist.AdmitHCL(src, name); !errors.Is(err, dist.ErrHCLTooManyTokens) {
			t.Errorf("AdmitHCL(%s): %v", dist.Printable(name), err)
		}
	}
	for name, src := range map[string][]byte{
		"policy.tf":      registrytest.IAMPolicyTF(3 << 19),   // 1.5 MiB
		"policy.tf.json": registrytest.IAMPolicyJSON(7 << 19), // 3.5 MiB
		"small.tf":       registrytest.IAMPolicyTF(64 << 10),
		"small.tf.json":  registrytest.IAMPolicyJSON(64 << 10),
	} {
		n, err := dist.CheckHCLTokens(src, name)
		real := dist.RealTokens(src, strings.HasSuffix(name, ".json"))
		t.Logf("%s: %d bytes, %d tokens, counted %d", name, len(src), real, n)
		if err != nil || n < real || n > real*11/10 {
			t.Errorf("%s: counted %d tokens, the scanner makes %d: %v", name, n, real, err)
		}
	}
}

// TestHoldHCLTokens: what is being parsed is held on one process-wide
// budget: a file admitted holds its tokens until released, a second one
// waits for them, and a release twice gives back once.
func TestHoldHCLTokens(t *testing.T) {
	src := bytes.Repeat([]byte("a = 1\n"), dist.MaxHCLTokens/4-1)
	release, err := dist.AdmitHCL(src, "big.tf")
	if err != nil {
		t.Fatal(err)
	}
	if dist.HCLParsingFree(5) {
		t.Fatal("a file at the limit is being parsed and the budget still has room")
	}
	got := make(chan func())
	go func() { got <- dist.HoldHCLTokens(dist.MaxHCLTokens) }()
	select {
	case <-got:
		t.Fatal("a second file was let in while the budget was in use")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	release()
	second := <-got
	if dist.HCLParsingFree(1) {
		t.Error("the released tokens were given back twice")
	}
	second()
	if !dist.HCLParsingFree(dist.MaxHCLTokensParsing) {
		t.Error("the budget was not given back")
	}
	if _, err := dist.AdmitHCL([]byte("a = "+strings.Repeat("[", 1000)), "deep.tf"); !errors.Is(err, dist.ErrHCLTooDeep) {
		t.Errorf("deep.tf: %v", err)
	}
	if !dist.HCLParsingFree(dist.MaxHCLTokensParsing) {
		t.Error("a refused file kept its tokens")
	}
}

// TestHCLTokensLinear: counting is linear in the file and keeps no stack
// that grows with it, whatever the file: 4 MiB of unterminated comment
// openers (each would search to the end for its "*/") or of nested
// template interpolations.
func TestHCLTokensLinear(t *testing.T) {
	for name, src := range map[string][]byte{
		"comments.tf": bytes.Repeat([]byte("/* "), 4<<20/3),
		"interps.tf":  append([]byte("a = "), bytes.Repeat([]byte(`"${`), 4<<20/3)...),
		"heredocs.tf": bytes.Repeat([]byte("a = <<A\n${<<A\n"), 4<<20/14),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		dist.HCLTokens(src, name)
		d := time.Since(start)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; d > 2*time.Second || alloc > 1<<20 {
			t.Errorf("%s: counting took %s and allocated %d bytes", name, d, alloc)
		}
	}
}
