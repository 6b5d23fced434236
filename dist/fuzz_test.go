package dist

import (
	"bytes"
	"testing"
)

func FuzzParseShasums(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  x.zip\n"))
	f.Add([]byte("zz  x\n\n  \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, allValid, err := ParseShasums(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, l := range lines {
			if len(l.Hex) != 64 || l.Filename == "" {
				t.Fatalf("accepted a bad line: %+v", l)
			}
		}
		_ = allValid
	})
}

// FuzzCountSARIF: any report (untrusted: it comes from a scanner reading
// untrusted input, and from bundles) gives an answer without panicking,
// and the same answer again.
func FuzzCountSARIF(f *testing.F) {
	f.Add([]byte(`{"version":"2.1.0","runs":[{"results":[{"level":"error"},{}]}]}`))
	f.Add([]byte(`{"version":"2.1.0","runs":[{"results":[{"level":"note","x":[[[{}]]]}]}],"$schema":"x"}`))
	f.Add([]byte(`[1,2,3]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := CountSARIF(bytes.NewReader(b))
		a2, ok2 := CountSARIF(bytes.NewReader(b))
		if ok != ok2 || ok && *a != *a2 {
			t.Fatal("two answers for one report")
		}
		if ok && (a.Error < 0 || a.Total() > len(b)) {
			t.Fatalf("impossible counts %+v", a)
		}
	})
}
