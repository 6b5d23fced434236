package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
)

// The stand-in CLI releases ReleaseWorld publishes, oldest first, and their
// platforms.
var (
	TerraformReleases = []string{"1.13.5", "1.14.0", "1.14.2", "1.14.3"}
	TofuReleases      = []string{"1.10.7", "1.11.0", "1.11.2"}
	ReleasePlatforms  = []string{"linux_amd64", "darwin_arm64", "windows_amd64"}
)

// Releases is what ReleaseWorld published: the stand-in publisher keys
// and their armored public keys as files (for a manifest's publisher_key
// and the consumers' key settings).
type Releases struct {
	HashiCorp, OpenTofu       *openpgp.Entity
	HashiCorpKey, OpenTofuKey string // armored public key files
}

// ReleaseWorld publishes TerraformReleases and TofuReleases on in, in
// their publishers' layouts, signed by stand-in keys (never the keys
// airgap pins), each zip holding the clistub binary stamped with its
// release (CLIStub): it runs, and prints "Terraform vX.Y.Z" or
// "OpenTofu vX.Y.Z" for 'version'.
func ReleaseWorld(t *testing.T, in *registrytest.Internet) *Releases {
	t.Helper()
	stub := CLIStub(t)
	rel := &Releases{HashiCorp: bundletest.Key(t, "HashiCorp stand-in"), OpenTofu: bundletest.Key(t, "OpenTofu stand-in")}
	dir := t.TempDir()
	rel.HashiCorpKey = filepath.Join(dir, "hashicorp-standin.asc")
	rel.OpenTofuKey = filepath.Join(dir, "opentofu-standin.asc")
	bundletest.WriteFile(t, rel.HashiCorpKey, []byte(bundletest.Armor(t, rel.HashiCorp)))
	bundletest.WriteFile(t, rel.OpenTofuKey, []byte(bundletest.Armor(t, rel.OpenTofu)))
	for _, v := range TerraformReleases {
		in.AddCLIRelease(t, "terraform", v, ReleasePlatforms, stub, rel.HashiCorp)
	}
	for _, v := range TofuReleases {
		in.AddCLIRelease(t, "tofu", v, ReleasePlatforms, stub, rel.OpenTofu)
	}
	return rel
}

var clistub struct {
	once sync.Once
	path string
	err  string
}

// CLIStub builds dist/registrytest/clistub once into the test cache and
// returns its path. The cached copy is found by name ("clistub-1"): a
// change to the program bumps the number here and in the preflight's list.
func CLIStub(t *testing.T) string {
	t.Helper()
	clistub.once.Do(func() {
		bin, cached, errText := CacheBin("clistub-1")
		if cached || errText != "" {
			clistub.path, clistub.err = bin, errText
			return
		}
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin+".partial", "./clistub")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "dist", "registrytest")
		cmd.Env = append(registrytest.UnguardedEnv(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			clistub.err = "go build clistub: " + err.Error() + "\n" + string(out)
			return
		}
		if err := os.Rename(bin+".partial", bin); err != nil {
			clistub.err = err.Error()
			return
		}
		clistub.path = bin
	})
	if clistub.err != "" {
		t.Fatalf("the stand-in CLI binary could not be built: %s", clistub.err)
	}
	return clistub.path
}
