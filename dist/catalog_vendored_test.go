package dist

import (
	"strings"
	"testing"

	"github.com/airgap/airgap/verify"
)

// A signed bundle's vendored-source records are printed by inventory, one
// line each: a record with a newline or an escape in it (which export never
// writes) would forge lines or rewrite the terminal, so import refuses it;
// so it does a path that is not a local one.
func TestValidateVendoredRecords(t *testing.T) {
	good := VendoredCall{File: "main.tf", Line: 3, Module: "vpc", Source: "git::https://h.example/x.git", Digest: verify.Digest("sha256:" + strings.Repeat("ab", 32)), Path: "./.airgap/modules/" + strings.Repeat("ab", 32)}
	for name, edit := range map[string]func(*VendoredCall){
		"good":              func(*VendoredCall) {},
		"newline in source": func(v *VendoredCall) { v.Source += "\n  registry.terraform.io/hashicorp/aws 9.9.9 FORGED" },
		"escape in file":    func(v *VendoredCall) { v.File = "\x1b[2Jmain.tf" },
		"bidi in path":      func(v *VendoredCall) { v.Path += "\u202e" },
		"absolute path":     func(v *VendoredCall) { v.Path = "/etc" },
		"newline in module": func(v *VendoredCall) { v.Module = "a\nb" },
	} {
		v := good
		edit(&v)
		c := &Catalog{Modules: []ModuleVersion{{Host: "h.example", Namespace: "a", Name: "b", System: "aws", Version: "1.0.0", Archive: verify.Digest("sha256:" + strings.Repeat("cd", 32)), Vendored: []VendoredCall{v}}}}
		err := c.Validate(nil)
		if (name == "good") != (err == nil) {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\n\x1b\u202e") {
			t.Errorf("%s: error not escaped: %q", name, err)
		}
	}
}
