package hostile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestHostileReservedReleaseHost: a bundle, validly signed by the site's
// export key, that carries a provider or a module whose address uses the
// host airgap reserves for CLI releases (cli.airgap.invalid). Taken in, a
// provider cli.airgap.invalid/hashicorp/aws would be counted in the usage
// file as the release "hashicorp/aws", admitted by an access rule meant
// for releases only (cli.airgap.invalid/**), and its namespace
// cli.airgap.invalid/terraform would be the very name under which a
// station's approval accepts Terraform's release key. verify and import
// refuse it, naming the address, and the store stays as it was.
func TestHostileReservedReleaseHost(t *testing.T) {
	t.Parallel()
	w := harness.NewHostileWorld(t)
	pub := bundletest.Key(t, "publisher")
	prov := w.Provider(t, "reserved", "cli.airgap.invalid", "aws", "1.0.0", pub, 4<<10, "linux_amd64")
	prov.Namespace = "terraform"
	mod := w.Module(t, "net", "terraform", "1.0.0", "# net\n")
	mod.Host = "cli.airgap.invalid"
	root := filepath.Join(w.Work, "store")
	harness.MustRun(t, w.Work, nil, harness.Bin, "import", "--keyring", w.Keyring, "--store", root,
		w.Write(t, "seed", dist.Catalog{Providers: []dist.ProviderVersion{w.Provider(t, "random", "registry.terraform.io", "random", "3.6.0", pub, 4<<10, "linux_amd64")}}))
	before := bundletest.Snapshot(t, root)
	for _, tc := range []struct {
		name, addr string
		cat        dist.Catalog
	}{
		{"provider", "cli.airgap.invalid/terraform/aws", dist.Catalog{Providers: []dist.ProviderVersion{prov}}},
		{"module", "cli.airgap.invalid/terraform/net/aws", dist.Catalog{Modules: []dist.ModuleVersion{mod}}},
	} {
		path := w.Write(t, "reserved-"+tc.name, tc.cat)
		for _, args := range [][]string{{"verify", "--keyring", w.Keyring, path}, {"import", "--keyring", w.Keyring, "--store", root, path}} {
			out, err := harness.CmdRun(t, w.Work, nil, harness.Bin, args...)
			if harness.ExitCode(err) != 1 || !strings.Contains(out, tc.addr) || !strings.Contains(out, "reserved") {
				t.Errorf("%s %s (exit %d):\n%s", tc.name, args[0], harness.ExitCode(err), out)
			}
		}
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
}
