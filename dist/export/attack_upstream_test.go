package export_test

// ATTACK TESTS (atk-upstream review). Each TestAttack* asserts the behaviour a
// user depends on; one that FAILS on the reviewed main is a finding (see the
// review report), one that passes is an attack correctly refused.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registrytest"
)

// FINDING: a registry's module location may name a git repository on the
// exporting machine ("git::file:///home/user/private", or "git::/path"): the
// export clones it and carries its files into the bundle. (Terraform refuses
// plain local paths as registry locations, though not git::file://.) A
// registry should never choose what is read from the user's disk.
func TestAttackRegistryLocationReadsLocalRepo(t *testing.T) {
	in := registrytest.New(t)
	gitEnv(t, in)
	private := filepath.Join(t.TempDir(), "private")
	for _, args := range [][]string{{"init", "-q", "-b", "main", private},
		{"-C", private, "-c", "user.name=v", "-c", "user.email=v@v", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(private, "main.tf"), []byte("# SECRET=hunter2\n"), 0o644)
	for _, args := range [][]string{{"-C", private, "add", "-A"}, {"-C", private, "-c", "user.name=v", "-c", "user.email=v@v", "commit", "-q", "-m", "s"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	in.AddModule("registry.terraform.io", "evil", "steal", "aws", "1.0.0", "git::file://"+private)
	req, err := export.ParseSpec(writeSpec(t, "platforms = [\"linux_amd64\"]\nmodule \"evil/steal/aws\" {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := export.Run(context.Background(), req, options(t, in, t.TempDir(), bundletest.Key(t, "site")))
	if err == nil {
		t.Errorf("the registry made the export read %s from the local disk: module %s, archive %s",
			private, res.Manifest.Catalog.Modules[0].Source, res.Manifest.Catalog.Modules[0].Archive)
	}
}
