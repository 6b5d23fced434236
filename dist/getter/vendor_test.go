package getter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A package refused for the budget (with --allow-unvendored the export
// goes on) takes nothing from it: the packages after it still fit.
func TestBudgetRefusedTakesNothing(t *testing.T) {
	ctx := context.Background()
	archive := func(size int) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(strings.Repeat("#", size)), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "a.tar.gz")
		if err := NormalizeToFile(ctx, dir, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	b := &Budget{entries: 100, bytes: 1000}
	work := t.TempDir()
	if err := Unpack(ctx, archive(2000), filepath.Join(work, "big"), b); !errors.Is(err, ErrArchiveLimit) {
		t.Fatalf("over the budget: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "big")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused package left %v", err)
	}
	if b.entries != 100 || b.bytes != 1000 {
		t.Fatalf("a refused package took %d entries and %d bytes", 100-b.entries, 1000-b.bytes)
	}
	if err := Unpack(ctx, archive(900), filepath.Join(work, "small"), b); err != nil {
		t.Fatalf("a package within what is left: %v", err)
	}
	if b.bytes != 100 {
		t.Errorf("left %d bytes", b.bytes)
	}
}
