package export

import (
	"os"
	"path/filepath"
	"testing"
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
	})
}
