package vendoring

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airgap/airgap/dist/getter"
)

func TestVendorReservedFolder(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "main.tf"), []byte("module \"x\" {\n  source = \"git::https://h.example/x.git\"\n}\n"), 0o644)
	os.MkdirAll(filepath.Join(root, ".airgap", "modules"), 0o755)
	fetched := false
	_, err := Vendor(context.Background(), root, "", getter.NewBudget(), Options{Fetch: func(context.Context, *getter.Source) (*getter.Result, func(), error) {
		fetched = true
		return nil, nil, errors.New("no")
	}})
	if !errors.Is(err, ErrReserved) || fetched {
		t.Fatalf("a module with .airgap: %v (fetched %v)", err, fetched)
	}
}
