package dist

import (
	"strings"
	"testing"
)

// Underscores: Terraform 1.16 accepts them in provider namespaces
// (terraform-registry-address's pattern: letters, digits, dashes and
// underscores, a letter or digit first and last, at most 64). Nowhere else
// changes: provider types take letters, digits and dashes (every client
// refuses "_" there, and it separates the parts of a package's file name),
// module names keep the module registry's rules, host names have none.
func TestProviderNamespaceUnderscores(t *testing.T) {
	for in, want := range map[string]string{
		"my_org/tool":                    "registry.terraform.io/my_org/tool",
		"My_Org/Tool":                    "registry.terraform.io/my_org/tool",
		"registry.example.com/a_b_c/x-y": "registry.example.com/a_b_c/x-y",
		"a__b/t":                         "registry.terraform.io/a__b/t",
		"a-_b/t":                         "registry.terraform.io/a-_b/t",
		"hashicorp/aws":                  "registry.terraform.io/hashicorp/aws",
		strings.Repeat("n", 64) + "/t":   "registry.terraform.io/" + strings.Repeat("n", 64) + "/t",
	} {
		p, err := ParseProviderSource(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseProviderSource(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for in, want := range map[string]string{
		"_org/tool":                     `invalid namespace "_org"`,
		"org_/tool":                     `invalid namespace "org_"`,
		"-org/tool":                     `invalid namespace "-org"`,
		"o.rg/tool":                     `invalid namespace "o.rg"`,
		strings.Repeat("n", 65) + "/t":  "invalid namespace",
		"my_org/my_tool":                `invalid type "my_tool" (underscores are allowed in provider namespaces (Terraform 1.16), never in types)`,
		"hashicorp/_aws":                `invalid type "_aws" (underscores`,
		"hashicorp/aws-":                `invalid type "aws-" (letters, digits and single dashes`,
		"hashicorp/a--b":                `invalid type "a--b"`,
		"my_host.example.com/ns/t":      "invalid host",
		"hashicorp/" + "terraform_aws_": "invalid type",
	} {
		if p, err := ParseProviderSource(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseProviderSource(%q) = %v, %v; want an error containing %q", in, p, err, want)
		}
	}
	// Module addresses are unchanged: underscores in namespace and name,
	// as the module registry protocol has always allowed.
	for _, in := range []string{"my_org/vpc_x/aws", "registry.example.com/a_b/c_d/aws"} {
		if _, _, ok, err := ParseModuleSource(in); !ok || err != nil {
			t.Errorf("ParseModuleSource(%q): ok %v, err %v", in, ok, err)
		}
	}
	if _, _, ok, _ := ParseModuleSource("my_host.example.com/a/b/aws"); ok {
		t.Errorf("a host with an underscore read as a registry module address")
	}
	// A catalog still reads every provider an earlier airgap could write.
	for _, s := range []string{"my_org", "my_type", "a-b"} {
		if !ValidProviderName(s) {
			t.Errorf("ValidProviderName(%q) = false", s)
		}
	}
}
