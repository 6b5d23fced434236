package journey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestExportHaveHonoursOffline (issue 30, finding 3): export --have reads
// what the offline store says. A version it withdrew is left out of
// version constraints (a line says so; a dry run too), instead of being
// carried into a bundle the import refuses whole; an exact pin of one is
// an error naming the withdrawal, with the reinstate block as a hint; a
// provider signed by a key the store does not pin is flagged at export;
// and a dry run finds a withdraw block that the same manifest carries,
// FILE:LINE:COL, as the real export does.
func TestExportHaveHonoursOffline(t *testing.T) {
	t.Parallel()
	in := registrytest.World(t)
	s := harness.NewStation(t, in)
	const plat = "platforms = [\"linux_amd64\"]\n"
	harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store,
		s.Export(t, "first", plat+"provider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n"))
	harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store,
		s.Export(t, "withdraw", "withdraw \"hashicorp/random\" {\n  versions = \"3.6.2\"\n  reason   = \"CVE-2026-0001\"\n}\n"))
	have := s.Inventory(t, "have")

	// The monthly manifest asks for the newest 3.x: 3.6.2 is left out.
	monthly := filepath.Join(s.Work, "monthly.hcl")
	os.WriteFile(monthly, []byte(plat+"provider \"hashicorp/random\" {\n  versions = \"~> 3.5\"\n}\n"), 0o644)
	for _, dry := range []bool{true, false} {
		args := []string{"export", "--manifest", monthly, "--have", have, "--cache", filepath.Join(s.Work, "cache")}
		out := filepath.Join(s.Work, "monthly.bundle")
		if dry {
			args = append(args, "--dry-run")
		} else {
			args = append(args, "--sign-key", "k/site.key.asc", "--out", out)
		}
		got := harness.MustRun(t, s.Work, s.Online, harness.Bin, args...)
		if !strings.Contains(got, "provider registry.terraform.io/hashicorp/random 3.6.2: the offline store withdrew it (CVE-2026-0001); left out of ~> 3.5") ||
			!strings.Contains(got, "registry.terraform.io/hashicorp/random 3.6.0") || strings.Contains(got, "random 3.6.2: linux_amd64") {
			t.Errorf("export --have (dry run %v) did not leave the withdrawn version out:\n%s", dry, got)
		}
		if !dry {
			harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, out)
		}
	}

	// An exact pin of the withdrawn version: an error, with the hint.
	pinned := filepath.Join(s.Work, "pinned.hcl")
	os.WriteFile(pinned, []byte(plat+"provider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n"), 0o644)
	out, err := harness.CmdRun(t, s.Work, s.Online, harness.Bin, "export", "--manifest", pinned, "--have", have, "--dry-run", "--cache", filepath.Join(s.Work, "cache"))
	blocks := harness.HCLBlocks(t, out)
	if err == nil || !strings.Contains(out, pinned+":2:1: provider registry.terraform.io/hashicorp/random: every version matching 3.6.2 is withdrawn") ||
		!strings.Contains(out, "CVE-2026-0001") || len(blocks) != 1 || !strings.HasPrefix(blocks[0], "reinstate \"hashicorp/random\"") {
		t.Errorf("an exact pin of a withdrawn version (err %v):\n%s", err, out)
	}

	// The publisher rotates its key: the export says the store will refuse.
	oldKey := verify.Fingerprint(in.Publisher)
	in.Publisher = bundletest.Key(t, "rotated publisher")
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "random", "3.7.0", []string{"linux_amd64"}, 8<<10)
	rotated := filepath.Join(s.Work, "rotated.hcl")
	os.WriteFile(rotated, []byte(plat+"provider \"hashicorp/random\" {\n  versions = \"3.7.0\"\n}\n"), 0o644)
	out = harness.MustRun(t, s.Work, s.Online, harness.Bin, "export", "--manifest", rotated, "--have", have, "--sign-key", "k/site.key.asc",
		"--out", filepath.Join(s.Work, "rotated.bundle"), "--cache", filepath.Join(s.Work, "cache"))
	if !strings.Contains(out, "the offline side pins "+verify.GroupFingerprint(oldKey)+" for registry.terraform.io/hashicorp; this bundle will be refused unless approved at the station") {
		t.Errorf("export did not flag the key the offline store does not pin:\n%s", out)
	}

	// A manifest that withdraws what it carries: the dry run finds it.
	both := filepath.Join(s.Work, "both.hcl")
	os.WriteFile(both, []byte(plat+"provider \"hashicorp/random\" {\n  versions = \"3.6.0\"\n}\nwithdraw \"hashicorp/random\" {\n  versions = \"3.6.0\"\n  reason   = \"bad\"\n}\n"), 0o644)
	for _, dry := range []bool{true, false} {
		args := []string{"export", "--manifest", both, "--cache", filepath.Join(s.Work, "cache")}
		if dry {
			args = append(args, "--dry-run")
		} else {
			args = append(args, "--sign-key", "k/site.key.asc", "--out", filepath.Join(s.Work, "both.bundle"))
		}
		out, err := harness.CmdRun(t, s.Work, s.Online, harness.Bin, args...)
		if err == nil || !strings.Contains(out, both+":5:1: withdraw \"registry.terraform.io/hashicorp/random\": provider 3.6.0 is carried too: the block at "+both+":2:1 selects it") ||
			!strings.Contains(out, "hint: take the version out of the selecting block's versions") {
			t.Errorf("a manifest carrying what it withdraws (dry run %v, err %v):\n%s", dry, err, out)
		}
	}
}
