package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter"
)

// FuzzParseSpec: any manifest text gives a request or an error, never a
// panic, and every platform in an accepted request is a known one.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"~> 3.6\"\n  latest = 2\n}\n",
		"module \"terraform-aws-modules/vpc/aws\" {\n  versions = \"5.8.1\"\n}\n",
		"providers \"x\" {}\nresource \"a\" \"b\" {}\n",
		"provider \"hashicorp/aws\" {\n  platforms = [\"linux_amd46\"]\n}\n",
		"platforms = 3\n",
		"module \"site.example/net/vpc/aws\" {\n  source = \"git::https://git.site.example/net/vpc.git//m\"\n  versions = [\"1.0.0\", \"1.1.0-rc.1\"]\n  ref = \"release/${version}\"\n}\n",
		"module \"site.example/net/dns/aws\" {\n  source = \"https://a.example/dns-${version}.tar.gz\"\n  versions = [\"3.0.0\"]\n}\n",
		"withdraw \"hashicorp/aws\" {\n  versions = \"5.61.0, 5.61.1\"\n  reason = \"bad\"\n}\nreinstate \"a/b/c\" {\n  module = true\n  versions = \"1.0.0\"\n  reason = \"ok\"\n}\n",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src string) {
		p := filepath.Join(dir, "m.hcl")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		req, err := ParseSpec(p, nil)
		if err != nil {
			return
		}
		for _, pl := range req.Platforms {
			if CheckPlatforms([]string{pl}) != nil {
				t.Fatalf("accepted unknown platform %q", pl)
			}
		}
		for _, pr := range req.Providers {
			if CheckPlatforms(pr.Platforms) != nil {
				t.Fatalf("accepted unknown platforms %q", pr.Platforms)
			}
		}
		// A site module publishes semantic versions, each from a source the
		// getter reads, with a ref git cannot take for an option.
		for _, m := range req.Modules {
			if m.Site == nil {
				continue
			}
			for _, v := range m.Site.Versions {
				src, err := getter.Parse(m.Site.Locations[v])
				if !dist.ValidVersion(v) || err != nil || strings.HasPrefix(src.Ref, "-") || src.Ref != m.Site.Refs[v] {
					t.Fatalf("site module %s %s: location %q ref %q (%v)", m.Addr, v, m.Site.Locations[v], m.Site.Refs[v], err)
				}
			}
		}
	})
}
