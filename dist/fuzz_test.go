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
