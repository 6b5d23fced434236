package harness

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
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

// WriteAt writes m's catalog as a bundle signed by the site key at `at`
// (zero: now), with the publisher-key declarations decls.
func (w *hostileWorld) WriteAt(t *testing.T, name string, cat dist.Catalog, decls []bundle.PublisherKeyDecl, at time.Time) string {
	t.Helper()
	m := &bundle.Manifest{Format: bundle.FormatVersion, Tool: "hostile test", Catalog: cat, PublisherKeys: decls}
	for d, role := range cat.Blobs() {
		fi, err := os.Stat(w.Files[d])
		if err != nil {
			t.Fatalf("blob %s: %v", d.Short(), err)
		}
		m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: fi.Size(), Role: role})
	}
	sort.Slice(m.Blobs, func(i, j int) bool { return m.Blobs[i].Digest < m.Blobs[j].Digest })
	path := filepath.Join(w.Work, name+".bundle")
	bundletest.WriteSignedManifestAt(t, path, m, w.Files, w.Site, at)
	return path
}

// OpenBundle opens the bundle at path, checked against keyring, for the
// test to read; it is closed when the test ends.
func OpenBundle(t *testing.T, path, keyring string) *bundle.Reader {
	t.Helper()
	kr, err := verify.ReadKeyringFile(keyring)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	br, err := bundle.NewReader(f, kr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Close() })
	return br
}

// ImportStandard imports the standard fixture set into a new store.
func ImportStandard(t *testing.T) (storeDir string, set *bundletest.Set) {
	t.Helper()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, err := verify.PublicArmor(signer)
	if err != nil {
		t.Fatal(err)
	}
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set = bundletest.Standard(t, filepath.Join(work, "set"), signer)
	bf := filepath.Join(work, "set.bundle")
	set.WriteBundleFile(t, bf, signer, bundle.CompressionZstd)
	storeDir = filepath.Join(work, "store")
	MustRun(t, work, nil, Bin, "import", "--keyring", keyring, "--store", storeDir, bf)
	return storeDir, set
}

// TrustWorld is a site key (its public key in keyring), the Standard set
// of bundletest, and a store at root that imported it.
func TrustWorld(t *testing.T) (work string, site *openpgp.Entity, keyring, root string, set *bundletest.Set) {
	t.Helper()
	work = t.TempDir()
	site = bundletest.Key(t, "site")
	keyring = filepath.Join(work, "site.pub.asc")
	bundletest.WriteFile(t, keyring, []byte(bundletest.Armor(t, site)))
	set = bundletest.Standard(t, work, site)
	root = filepath.Join(work, "store")
	seed := filepath.Join(work, "seed.bundle")
	set.WriteBundleFile(t, seed, site, bundle.CompressionAuto)
	MustRun(t, work, nil, Bin, "import", "--keyring", keyring, "--store", root, seed)
	return work, site, keyring, root, set
}

// RawDeflated is a file's bytes deflated once, to be written into many
// zips (RawFile).
type RawDeflated struct {
	Packed []byte
	CRC    uint32
	Size   int
}

// RawFile adds an executable file of already deflated bytes to zw.
func RawFile(t *testing.T, zw *zip.Writer, name string, f RawDeflated) {
	t.Helper()
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		CRC32: f.CRC, CompressedSize64: uint64(len(f.Packed)), UncompressedSize64: uint64(f.Size)}
	h.SetMode(0o755)
	w, err := zw.CreateRaw(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(f.Packed)
}

// ZipProvider writes registry.terraform.io/hashicorp/TYPE 1.0.0 for the
// platforms (os_arch), each zip's files written by fill, with SHA256SUMS
// signed by pub.
func ZipProvider(t *testing.T, dir string, pub *openpgp.Entity, typ string, plats []string, fill func(zw *zip.Writer, plat string)) *bundletest.BuiltProvider {
	t.Helper()
	bp := &bundletest.BuiltProvider{Dir: dir, Files: map[string]string{}}
	pv := dist.ProviderVersion{Host: "registry.terraform.io", Namespace: "hashicorp", Type: typ, Version: "1.0.0", Protocols: []string{"5.0"}}
	var sums bytes.Buffer
	for _, plat := range plats {
		osName, arch, _ := strings.Cut(plat, "_")
		fn := "terraform-provider-" + typ + "_1.0.0_" + plat + ".zip"
		var z bytes.Buffer
		zw := zip.NewWriter(&z)
		fill(zw, plat)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fn)
		bundletest.WriteFile(t, p, z.Bytes())
		h1, err := dist.H1(p)
		if err != nil {
			t.Fatal(err)
		}
		d := verify.DigestBytes(z.Bytes())
		pv.Packages = append(pv.Packages, dist.Package{OS: osName, Arch: arch, Filename: fn, Digest: d, Size: int64(z.Len()), H1: h1})
		fmt.Fprintf(&sums, "%s  %s\n", d.Hex(), fn)
		bp.Files[fn] = p
	}
	pv.ShasumsName = "terraform-provider-" + typ + "_1.0.0_SHA256SUMS"
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, pub, bytes.NewReader(sums.Bytes()), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	bp.Files[pv.ShasumsName] = filepath.Join(dir, pv.ShasumsName)
	bp.Files[pv.ShasumsName+".sig"] = bp.Files[pv.ShasumsName] + ".sig"
	bundletest.WriteFile(t, bp.Files[pv.ShasumsName], sums.Bytes())
	bundletest.WriteFile(t, bp.Files[pv.ShasumsName+".sig"], sig.Bytes())
	pv.Shasums, pv.ShasumsSig = verify.DigestBytes(sums.Bytes()), verify.DigestBytes(sig.Bytes())
	pv.SigningKeys = []dist.SigningKey{{KeyID: verify.KeyID(pub), ASCIIArmor: bundletest.Armor(t, pub)}}
	bp.ProviderVersion = pv
	return bp
}

// WriteWithdrawBundle writes a bundle, signed by signer, that carries
// nothing and withdraws ws.
func WriteWithdrawBundle(t *testing.T, path string, signer *openpgp.Entity, ws ...dist.Withdrawal) {
	t.Helper()
	WriteCurationBundle(t, path, signer, ws, nil)
}

// WriteCurationBundle writes a signed bundle that only withdraws ws and
// reinstates rs.
func WriteCurationBundle(t *testing.T, path string, signer *openpgp.Entity, ws, rs []dist.Withdrawal) {
	t.Helper()
	wm := &bundle.Manifest{Format: bundle.FormatVersion, Tool: "airgap test",
		Catalog: dist.Catalog{Providers: []dist.ProviderVersion{}, Modules: []dist.ModuleVersion{}}, Withdraw: ws, Reinstate: rs}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw, err := bundle.NewWriter(f, wm, signer, bundle.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.WriteFiles(nil); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
}

// WithStation gives the station a key of its own and the store the
// policy: its import.hcl and the stations' keyring beside it.
func (s *station) WithStation(t *testing.T, policy string) string {
	t.Helper()
	MustRun(t, s.Work, nil, Bin, "keys", "generate", "--out", "k/station", "--name", "Transfer station 1 <station1@site.test>", "--no-passphrase")
	os.MkdirAll(s.Store, 0o755)
	pub, _ := os.ReadFile(filepath.Join(s.Work, "k/station.pub.asc"))
	os.WriteFile(filepath.Join(s.Store, "stations.pub.asc"), pub, 0o644)
	os.WriteFile(filepath.Join(s.Store, "import.hcl"), []byte(policy), 0o644)
	return filepath.Join(s.Work, "k/station.key.asc")
}

// inventory writes the store's 'airgap inventory --json' to NAME.json.
func (s *station) Inventory(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(s.Work, name+".json")
	os.WriteFile(p, []byte(MustRunStdout(t, s.Work, "inventory", "--store", s.Store, "--json")), 0o644)
	return p
}

// station is a stand-in internet, a site key, a store and the exports
// made against them.
type station struct {
	in      *registrytest.Internet
	Work    string
	Online  []string
	Keyring string
	Store   string
}

func NewStation(t *testing.T, in *registrytest.Internet) *station {
	s := &station{in: in, Work: t.TempDir()}
	s.Online = append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(s.Work, "none.tfrc"))
	MustRun(t, s.Work, nil, Bin, "keygen", "--out", "k/site", "--name", "Site Ops <ops@site.test>", "--no-passphrase")
	s.Keyring = filepath.Join(s.Work, "k/site.pub.asc")
	s.Store = filepath.Join(s.Work, "store")
	return s
}

// export writes manifest text to NAME.hcl and exports NAME.bundle.
func (s *station) Export(t *testing.T, name, manifest string, extra ...string) string {
	t.Helper()
	hcl := filepath.Join(s.Work, name+".hcl")
	os.WriteFile(hcl, []byte(manifest), 0o644)
	out := filepath.Join(s.Work, name+".bundle")
	MustRun(t, s.Work, s.Online, Bin, append([]string{"export", "--manifest", hcl, "--sign-key", "k/site.key.asc", "--out", out,
		"--cache", filepath.Join(s.Work, "cache")}, extra...)...)
	return out
}

// verify runs 'airgap verify' with args and returns stdout+stderr and the exit code.
func (s *station) Verify(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := CmdRun(t, s.Work, nil, Bin, append([]string{"verify", "--keyring", s.Keyring}, args...)...)
	return out, ExitCode(err)
}

// VerifyJSON runs 'airgap verify --json' and decodes its one document,
// checking the JSON conventions on the way: snake_case keys, no nulls.
func (s *station) VerifyJSON(t *testing.T, args ...string) (Review, map[string]any, int) {
	t.Helper()
	stdout, _, code := RunSplit(t, s.Work, nil, append([]string{"verify", "--keyring", s.Keyring, "--json"}, args...)...)
	var raw map[string]any
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("verify --json printed no JSON document: %v\n%s", err, stdout)
	}
	CheckJSONConventions(t, "", raw)
	var r Review
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	return r, raw, code
}

// CheckJSONConventions fails on what breaks the JSON convention
// (JSONViolations, the convention TestJSONConvention checks).
func CheckJSONConventions(t *testing.T, at string, v any) {
	t.Helper()
	for _, bad := range JSONViolations("verify --json"+at, v) {
		t.Error(bad)
	}
}

// Review is the part of 'airgap verify --json' the tests read.
type Review struct {
	OK        bool   `json:"ok"`
	Status    string `json:"status"`
	Error     string `json:"error"`
	Attention []struct {
		Kind, Subject, Message string
	} `json:"attention"`
	Providers []reviewProvider `json:"providers"`
	Modules   []struct {
		Address, Version, Source string
		Vendored                 []struct{ File, Source, Path, SHA256 string }
	} `json:"modules"`
	Withdraw []struct {
		Addr     string
		Versions []string
	} `json:"withdraw"`
	PublisherKeys []struct {
		Namespace string
		History   []struct{ Fingerprint, How string }
		InBundle  []struct{ Fingerprint, Status string } `json:"in_bundle"`
	} `json:"publisher_keys"`
	Forecast *struct {
		Verdict string
		Refused []struct{ Rule, Kind, Address, Version, Reason string }
	} `json:"forecast"`
	Against *struct {
		Added          []struct{ Kind, Address, Version string }       `json:"added"`
		AlreadyPresent []struct{ Kind, Address, Version string }       `json:"already_present"`
		Withdrawn      []struct{ Kind, Address, Version string }       `json:"withdrawn"`
		Refused        []struct{ Kind, Address, Version, Note string } `json:"refused"`
		KeyChanges     []struct {
			Namespace string
			Before    []struct{ Fingerprint string }
			Key       struct{ Fingerprint, Status string }
		} `json:"key_changes"`
	} `json:"against"`
}

func (r Review) AttentionOf(kind string) []string {
	var out []string
	for _, a := range r.Attention {
		if a.Kind == kind {
			out = append(out, a.Message)
		}
	}
	return out
}

// reviewProvider is a provider entry of 'airgap verify --json'.
type reviewProvider struct {
	Address, Version, Trust string
	KeyStatus               string `json:"key_status"`
	InStore                 string `json:"in_store"`
	Platforms               []struct {
		Platform, SHA256 string
	}
	Signature *struct {
		Signer  struct{ Fingerprint, Identity string }
		Created string
	}
}

func (r Review) Provider(addr, version string) (reviewProvider, bool) {
	for _, x := range r.Providers {
		if x.Address == addr && x.Version == version {
			return x, true
		}
	}
	return reviewProvider{}, false
}
