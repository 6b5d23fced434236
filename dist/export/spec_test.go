package export_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/export"
)

// TestParseSpecTooLarge: a manifest over export.MaxSpecSize is refused before it
// is read whole.
func TestParseSpecTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.hcl")
	if err := os.WriteFile(p, bytes.Repeat([]byte("# comment line\n"), export.MaxSpecSize/15+2), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := export.ParseSpec(p, nil); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Fatalf("a %d-byte manifest: %v", export.MaxSpecSize+30, err)
	}
}
