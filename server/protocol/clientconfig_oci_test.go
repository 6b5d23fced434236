package protocol_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/airgap/airgap/server/protocol"
)

func TestClientConfigOCI(t *testing.T) {
	var b bytes.Buffer
	err := protocol.WriteClientConfig(&b, protocol.ClientConfigOptions{URL: "https://airgap.site:8443", Tool: "tofu", Mode: "oci",
		Origins: []string{"registry.terraform.io", "registry.opentofu.org", "reg.example:5000"}})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`repository_template = "airgap.site:8443/${hostname}/${namespace}/${type}"`,
		`include             = ["registry.terraform.io/*/*", "registry.opentofu.org/*/*"]`,
		`oci://airgap.site:8443/<origin>/modules/<namespace>/<name>/<system>?tag=<version>`,
		`"modules.v1" = "https://airgap.site:8443/origin/reg.example:5000/v1/modules/"`,
		"Not reachable over OCI (a port is not allowed in an OCI repository name): reg.example:5000",
		"TF_CLI_CONFIG_FILE", "oci_credentials",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("oci config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "TOFU_CLI_CONFIG_FILE") {
		t.Error("OpenTofu has no TOFU_CLI_CONFIG_FILE")
	}
	for name, opt := range map[string]protocol.ClientConfigOptions{
		"terraform": {URL: "https://a.example/", Tool: "terraform", Mode: "oci"},
		"path":      {URL: "https://a.example/airgap/", Tool: "tofu", Mode: "oci"},
	} {
		if err := protocol.WriteClientConfig(&bytes.Buffer{}, opt); err == nil || !strings.Contains(err.Error(), "hint:") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
