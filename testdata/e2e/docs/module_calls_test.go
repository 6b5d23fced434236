package docs

import (
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestModulePageCalls: a module's catalog page lists the registry modules
// it calls (read from its archive, with the version constraint and the
// calling file and line), linked to their pages: the stand-in world's
// example/vpc/aws calls example/subnet/aws. A module that calls none says
// so.
func TestModulePageCalls(t *testing.T) {
	t.Parallel()
	in := registrytest.World(t)
	store := harness.ExportImport(t, in, harness.E2EManifest)
	srv := harness.StartServe(t, store)
	get := docsClient(t, srv.CAFile)
	code, body, _ := get(srv.Base+"ui/modules/registry.terraform.io/example/vpc/aws/1.0.0", "")
	_, tbl, _ := strings.Cut(body, `id="module-calls-table"`)
	tbl, _, _ = strings.Cut(tbl, "</table>")
	if code != 200 || !strings.Contains(tbl, `<a href="/ui/modules/registry.terraform.io/example/subnet/aws"><code>registry.terraform.io/example/subnet/aws</code></a>`) ||
		!strings.Contains(body, `Modules called (1)`) {
		t.Errorf("the vpc module's page (%d) does not list its call of example/subnet/aws:\n%s", code, tbl)
	}
	t.Logf("the vpc module's calls:%s", tbl)
	code, body, _ = get(srv.Base+"ui/modules/registry.terraform.io/example/subnet/aws/2.1.0", "")
	if _, after, _ := strings.Cut(body, `id="module-calls"`); code != 200 || !strings.HasPrefix(strings.TrimPrefix(after, ">Registry modules it calls</h2>\n"), `<p class="muted">none</p>`) {
		t.Errorf("the subnet module's page (%d):\n%.400s", code, after)
	}
}
