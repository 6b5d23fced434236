package journey

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestProviderNamespaceUnderscore: a provider whose namespace has an
// underscore (Terraform 1.16 accepts them) goes through export, import and
// every protocol serve speaks; an underscore anywhere else in an address
// (a provider type, a host) is refused at export with the reason. No
// client in reach accepts such a namespace yet (Terraform 1.16 is not
// released here; 1.15 and OpenTofu 1.12 refuse it), so the answers are
// checked directly.
func TestProviderNamespaceUnderscore(t *testing.T) {
	t.Parallel()
	in := registrytest.World(t)
	in.AddProvider(t, "registry.terraform.io", "my_org", "tool", "1.0.0", []string{"linux_amd64", "darwin_arm64"}, 4<<10)
	_, base, caFile := exportImportServe(t, in, "platforms = [\"linux_amd64\", \"darwin_arm64\"]\nprovider \"My_Org/tool\" {}\n")
	cl := harness.CAFileClient(t, caFile)
	for path, want := range map[string]string{
		"v1/providers/my_org/tool/versions":                                                `"version":"1.0.0"`,
		"origin/registry.terraform.io/v1/providers/my_org/tool/1.0.0/download/linux/amd64": `"filename":"terraform-provider-tool_1.0.0_linux_amd64.zip"`,
		"mirror/registry.terraform.io/my_org/tool/index.json":                              `"1.0.0"`,
		"mirror/registry.terraform.io/my_org/tool/1.0.0.json":                              `"darwin_arm64"`,
		"v2/registry.terraform.io/my_org/tool/tags/list":                                   `"1.0.0"`,
	} {
		resp, err := cl.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %s %s (want %s)", path, resp.Status, b, want)
		}
	}
	work := t.TempDir()
	for src, want := range map[string]string{
		"my_org/my_tool":          `invalid type "my_tool" (underscores are allowed in provider namespaces (Terraform 1.16), never in types)`,
		"my_host.example.com/a/b": `invalid host "my_host.example.com"`,
		"_org/tool":               `invalid namespace "_org"`,
	} {
		mf := filepath.Join(work, "m.hcl")
		os.WriteFile(mf, []byte("provider \""+src+"\" {}\n"), 0o644)
		if out, err := harness.CmdRun(t, work, in.Env(), harness.Bin, "export", "--manifest", mf, "--dry-run", "--cache", filepath.Join(work, "cache")); err == nil || !strings.Contains(out, want) {
			t.Errorf("export of provider %q (err %v) lacks %q:\n%s", src, err, want, out)
		}
	}
}
