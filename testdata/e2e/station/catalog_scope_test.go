package station

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestCatalogImportsInScope: the catalog's "Bundles imported" table shows
// a person only the namespaces their rules let them read. One bundle
// brings hashicorp/random and registry.opentofu.org/hashicorp/local; its
// station approval accepts the publisher key for
// registry.terraform.io/hashicorp. A token for the OpenTofu provider sees
// the import and its approval but not the key accepted for a namespace
// it may not read; a token for everything sees the key.
func TestCatalogImportsInScope(t *testing.T) {
	t.Parallel()
	in := registrytest.World(t)
	s := harness.NewStation(t, in)
	stationKey := s.WithStation(t, stationPolicy)
	pubKey := verify.Fingerprint(in.Publisher)
	const manifest = "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\nprovider \"registry.opentofu.org/hashicorp/local\" {\n  versions = \"2.5.1\"\n}\n"
	b := s.Export(t, "two", manifest)
	harness.MustRun(t, s.Work, nil, harness.Bin, "approve", "--key", stationKey, "--keyring", s.Keyring, "--accept-publisher-key", pubKey, b)
	harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b)

	access := filepath.Join(s.Work, "access.hcl")
	mint := func(name, pattern string) string {
		out := harness.MustRun(t, "", nil, harness.Bin, "token", "create", "--access", access, "--name", name, "--allow", pattern)
		return strings.TrimSpace(out[:strings.Index(out, "\n")])
	}
	local, all := mint("local", "registry.opentofu.org/hashicorp/local"), mint("all", "**")
	srv := harness.StartServe(t, s.Store, "--access", access)
	cl := harness.CAFileClient(t, srv.CAFile)
	home := func(tok string) string {
		req, _ := http.NewRequest("GET", srv.Base, nil)
		req.SetBasicAuth("me", tok)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("the catalog: %d\n%s", resp.StatusCode, body)
		}
		_, tbl, _ := strings.Cut(string(body), `id="bundle-table"`)
		tbl, _, _ = strings.Cut(tbl, "</table>")
		return tbl
	}
	const tf = "for <code>registry.terraform.io/hashicorp</code>"
	if tbl := home(local); !strings.Contains(tbl, `class="approval"`) || strings.Contains(tbl, "registry.terraform.io") {
		t.Errorf("the bundles table for a token of registry.opentofu.org/hashicorp/local names a namespace outside its rules, or lacks the import:\n%s", tbl)
	}
	if tbl := home(all); !strings.Contains(tbl, tf) {
		t.Errorf("the bundles table for a token of everything lacks the accepted key:\n%s", tbl)
	}
}
