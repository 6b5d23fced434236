package harness

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// hostileWorld is a site key, a publisher key, and real signed provider
// builds and a module archive to assemble bundles from.
type hostileWorld struct {
	Work    string
	Site    *openpgp.Entity
	Keyring string // the site's public key file
	Files   map[verify.Digest]string
}

func NewHostileWorld(t *testing.T) *hostileWorld {
	w := &hostileWorld{Work: t.TempDir(), Site: bundletest.Key(t, "site"), Files: map[verify.Digest]string{}}
	w.Keyring = filepath.Join(w.Work, "site.pub.asc")
	bundletest.WriteFile(t, w.Keyring, []byte(bundletest.Armor(t, w.Site)))
	return w
}

// provider builds one provider version signed by signer, in its own directory.
func (w *hostileWorld) Provider(t *testing.T, dir, host, typ, version string, signer *openpgp.Entity, size int, plats ...string) dist.ProviderVersion {
	t.Helper()
	bp := bundletest.BuildProvider(t, filepath.Join(w.Work, dir), bundletest.Provider{Host: host, Namespace: "hashicorp", Type: typ,
		Version: version, Platforms: plats, Signer: signer, PackageSize: size})
	for fn, p := range bp.Files {
		w.Files[bundletest.FileDigest(t, p)] = p
		_ = fn
	}
	return bp.ProviderVersion
}

func (w *hostileWorld) Module(t *testing.T, name, ns, version, content string) dist.ModuleVersion {
	t.Helper()
	p := filepath.Join(w.Work, "mod-"+name+"-"+version+"-"+content+".tar.gz")
	bundletest.WriteModuleArchive(t, p, map[string]string{"main.tf": content})
	d := bundletest.FileDigest(t, p)
	w.Files[d] = p
	fi, _ := os.Stat(p)
	return dist.ModuleVersion{Host: "registry.terraform.io", Namespace: ns, Name: name, System: "aws", Version: version, Archive: d, Size: fi.Size()}
}

// write writes cat as a bundle signed by the site key, its blob list made
// from what cat refers to, however wrong cat is.
func (w *hostileWorld) Write(t *testing.T, name string, cat dist.Catalog) string {
	t.Helper()
	return w.WriteAt(t, name, cat, nil, time.Time{})
}
