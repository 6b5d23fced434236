package protocol

import (
	"bytes"
	"strings"
	"testing"
)

// TestClientConfigCredentials: the hosts a client looks a token up for
// (every origin, for host overrides, and the appliance, for the mirror,
// addresses naming it and OCI) get a credentials block with --token-file,
// and are named as TF_TOKEN_ variables without it (a host with a port as
// a block, which is all that can name it).
func TestClientConfigCredentials(t *testing.T) {
	origins := []string{"registry.terraform.io", "registry.opentofu.org", "my-reg.example"}
	const tok = "airgap_0123456789012345678901234567890123456789abc"
	for _, mode := range []string{"registry", "mirror", "oci"} {
		var with, without bytes.Buffer
		opt := ClientConfigOptions{URL: "https://airgap.site:8443/", Tool: "tofu", Mode: mode, Origins: origins, Token: tok}
		if err := WriteClientConfig(&with, opt); err != nil {
			t.Fatal(err)
		}
		opt.Token = ""
		if err := WriteClientConfig(&without, opt); err != nil {
			t.Fatal(err)
		}
		for _, h := range append([]string{"airgap.site:8443"}, origins...) {
			if want := "credentials \"" + h + "\" {\n  token = \"" + tok + "\"\n}"; !strings.Contains(with.String(), want) {
				t.Errorf("%s mode with a token lacks %q:\n%s", mode, want, with.String())
			}
		}
		for _, want := range []string{"export TF_TOKEN_registry_terraform_io=<token>", "export TF_TOKEN_registry_opentofu_org=<token>",
			"export TF_TOKEN_my__reg_example=<token>", "(airgap.site:8443 has a port, which TF_TOKEN_ cannot name: use a credentials block)"} {
			if !strings.Contains(without.String(), want) {
				t.Errorf("%s mode without a token lacks %q:\n%s", mode, want, without.String())
			}
		}
		if strings.Contains(without.String(), "airgap_") {
			t.Errorf("%s mode without a token holds one", mode)
		}
		ociBlock := "oci_credentials \"airgap.site:8443\" {\n  username = \"airgap\"\n  password = \"" + tok + "\"\n}"
		if got := strings.Contains(with.String(), ociBlock); got != (mode == "oci") {
			t.Errorf("%s mode: oci_credentials block present = %v:\n%s", mode, got, with.String())
		}
	}
	if tokenEnvName("registry.terraform.io") != "TF_TOKEN_registry_terraform_io" || tokenEnvName("a-b.c") != "TF_TOKEN_a__b_c" || tokenEnvName("h:1") != "" {
		t.Error("tokenEnvName")
	}
}
