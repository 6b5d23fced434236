package enclave

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestEnclaveReleases: the CLI releases an offline store holds go on to
// the next network with 'export --from-store' (all of them, or what a
// manifest's cli blocks select, on its platforms), tied to the chain of
// custody and checked again against their publisher keys on the way in.
func TestEnclaveReleases(t *testing.T) {
	e := newEnclaves(t)
	rel := harness.ReleaseWorld(t, e.in)
	first := e.internetExport(t, "releases", `platforms = ["linux_amd64", "darwin_arm64"]
cli "terraform" {
  versions      = "~> 1.14"
  latest        = 2
  publisher_key = "`+rel.HashiCorpKey+`"
}
cli "tofu" {
  publisher_key = "`+rel.OpenTofuKey+`"
}
`)
	storeA := e.path("store-a")
	e.importInto(t, storeA, e.pub("internet"), first)

	all, _ := e.fromStore(t, storeA, "a", "a-all")
	out := harness.MustRun(t, e.work, nil, harness.Bin, "verify", "--keyring", e.pub("a"), all)
	for _, want := range []string{"release:    terraform 1.14.3: SHA256SUMS signed by HashiCorp stand-in", "release:    tofu 1.11.2: SHA256SUMS signed by OpenTofu stand-in"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify of the bundle from store A lacks %q:\n%s", want, out)
		}
	}
	// A release record no hop carries (one signature file dropped: still
	// a release its key verifies) is refused by the chain of custody.
	br := harness.OpenBundle(t, all, e.pub("a"))
	m := *br.Manifest()
	m.Catalog.Releases = append([]dist.CLIRelease(nil), m.Catalog.Releases...)
	for i := range m.Catalog.Releases {
		if r := &m.Catalog.Releases[i]; r.Product == "terraform" && r.Version == "1.14.3" {
			r.Signatures = r.Signatures[:1]
		}
	}
	m.SBOM, m.SBOMGenerator = "", 0
	files := map[verify.Digest]string{}
	used := m.Catalog.Blobs()
	var blobs []bundle.Blob
	for _, b := range m.Blobs {
		if b.Role == dist.RoleSBOM {
			continue
		}
		if _, ok := used[b.Digest]; !ok && strings.HasPrefix(b.Role, "release-") {
			continue // the dropped signature, if no other release uses it
		}
		blobs = append(blobs, b)
		files[b.Digest] = filepath.Join(storeA, "blobs", "sha256", b.Digest.Hex())
	}
	m.Blobs = blobs
	kr, err := openpgp.ReadArmoredKeyRing(mustOpen(t, e.sec("a")))
	if err != nil {
		t.Fatal(err)
	}
	forged := e.path("forged.bundle")
	bundletest.WriteSignedManifestAt(t, forged, &m, files, kr[0], time.Now())
	harness.ExpectRefused(t, e.work, e.pub("a"), storeA, forged, "release terraform 1.14.3", "in no hop's signed manifest")

	storeB := e.path("store-b")
	e.importInto(t, storeB, e.pub("a"), all)
	if got := storeReleases(t, storeB); got != "terraform 1.14.2 2, terraform 1.14.3 2, tofu 1.11.2 4" {
		t.Errorf("store B holds releases %q", got)
	}

	mf := e.path("some.hcl")
	os.WriteFile(mf, []byte(`platforms = ["linux_amd64"]
cli "terraform" {
  versions = "1.14.3"
}
`), 0o644)
	some, text := e.fromStore(t, storeA, "a", "a-some", "--manifest", mf)
	t.Logf("export --from-store --manifest:\n%s", text)
	storeC := e.path("store-c")
	e.importInto(t, storeC, e.pub("a"), some)
	if got := storeReleases(t, storeC); got != "terraform 1.14.3 1" {
		t.Errorf("store C holds releases %q, want terraform 1.14.3 (linux_amd64) alone", got)
	}
}

// storeReleases lists the releases of the store at root: "PRODUCT VERSION
// ARCHIVES", comma-separated.
func storeReleases(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ix struct {
		Catalog dist.Catalog `json:"catalog"`
	}
	if err := json.Unmarshal(b, &ix); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range ix.Catalog.Releases {
		out = append(out, r.String()+" "+strconv.Itoa(len(r.Builds)))
	}
	return strings.Join(out, ", ")
}

func mustOpen(t *testing.T, path string) io.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
