// Package bundletest builds real fixtures for tests: OpenPGP keys, provider
// zips with signed SHA256SUMS, module archives, catalogs and signed bundles.
// Nothing in it is mocked; it only saves tests from repeating the setup.
package bundletest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/modzip"
	"github.com/airgap/airgap/verify"
)

var (
	keyOnce sync.Map // name -> *openpgp.Entity
)

// Key returns an RSA-2048 OpenPGP key, one per name per test binary (site
// keys made by 'airgap keygen' are 3072 bits; tests use 2048 for speed).
func Key(t testing.TB, name string) *openpgp.Entity {
	t.Helper()
	if e, ok := keyOnce.Load(name); ok {
		return e.(*openpgp.Entity)
	}
	e, err := openpgp.NewEntity(name, "", name+"@example.test", &packet.Config{
		Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048, DefaultHash: crypto.SHA256,
	})
	if err != nil {
		t.Fatal(err)
	}
	actual, _ := keyOnce.LoadOrStore(name, e)
	return actual.(*openpgp.Entity)
}

// KeyAt returns a new RSA-2048 key created at `at` (its signatures are
// dated no earlier: a key "from 2099" signs in 2099).
func KeyAt(t testing.TB, name string, at time.Time) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.test", &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048,
		DefaultHash: crypto.SHA256, Time: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Armor returns the armored public key of e.
func Armor(t testing.TB, e *openpgp.Entity) string {
	t.Helper()
	s, err := verify.PublicArmor(e)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Provider describes a fixture provider version.
type Provider struct {
	Host, Namespace, Type, Version string
	Platforms                      []string // os_arch
	Signer                         *openpgp.Entity
	// PackageSize pads each zip with incompressible data to about this size.
	PackageSize int
	// Binary, if set, is a real provider executable packed (deflated) into
	// the package for Platform instead of a stand-in script.
	Binary         string
	BinaryPlatform string
	// SiteSigned marks the version as re-signed by the site key (Signer
	// must be the key that signs the bundle; Host registry.opentofu.org),
	// as export does when the registry lists no key.
	SiteSigned bool
}

// BuiltProvider is a provider version written to a directory.
type BuiltProvider struct {
	dist.ProviderVersion
	Dir   string            // holds every file below
	Files map[string]string // filename -> path (zips, SHA256SUMS, .sig)
}

// BuildProvider writes zips, SHA256SUMS and its signature into dir.
func BuildProvider(t testing.TB, dir string, p Provider) *BuiltProvider {
	t.Helper()
	bp := &BuiltProvider{Dir: dir, Files: map[string]string{}}
	pv := dist.ProviderVersion{Host: p.Host, Namespace: p.Namespace, Type: p.Type, Version: p.Version, Protocols: []string{"5.0"}}
	var sums bytes.Buffer
	plats := append([]string(nil), p.Platforms...)
	sort.Strings(plats)
	for _, plat := range plats {
		osName, arch, _ := strings.Cut(plat, "_")
		fn := fmt.Sprintf("terraform-provider-%s_%s_%s_%s.zip", p.Type, p.Version, osName, arch)
		path := filepath.Join(dir, fn)
		if p.Binary != "" && plat == p.BinaryPlatform {
			writeBinaryZip(t, path, p.Type, p.Version, p.Binary)
		} else {
			WriteProviderZip(t, path, p.Type, p.Version, plat, p.PackageSize)
		}
		d := FileDigest(t, path)
		h1, err := dist.H1(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		pv.Packages = append(pv.Packages, dist.Package{OS: osName, Arch: arch, Filename: fn, Digest: d, Size: fi.Size(), H1: h1})
		fmt.Fprintf(&sums, "%s  %s\n", d.Hex(), fn)
		bp.Files[fn] = path
	}
	pv.ShasumsName = fmt.Sprintf("terraform-provider-%s_%s_SHA256SUMS", p.Type, p.Version)
	sumsPath := filepath.Join(dir, pv.ShasumsName)
	WriteFile(t, sumsPath, sums.Bytes())
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, p.Signer, bytes.NewReader(sums.Bytes()), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	sigPath := sumsPath + ".sig"
	WriteFile(t, sigPath, sig.Bytes())
	pv.Shasums = verify.DigestBytes(sums.Bytes())
	pv.ShasumsSig = verify.DigestBytes(sig.Bytes())
	pv.SigningKeys = []dist.SigningKey{{KeyID: verify.KeyID(p.Signer), ASCIIArmor: Armor(t, p.Signer)}}
	if p.SiteSigned {
		pv.SiteSigned, pv.SigningKeys[0].Source = true, check.SiteKeySource
	}
	bp.Files[pv.ShasumsName] = sumsPath
	bp.Files[pv.ShasumsName+".sig"] = sigPath
	bp.ProviderVersion = pv
	return bp
}

// WriteProviderZip writes a provider-like zip: one executable file, with a
// fixed timestamp, padded to about size bytes with pseudo-random data.
func WriteProviderZip(t testing.TB, path, typ, version, plat string, size int) {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	name := fmt.Sprintf("terraform-provider-%s_v%s", typ, version)
	if len(plat) >= 7 && plat[:7] == "windows" {
		name += ".exe"
	}
	h := &zip.FileHeader{Name: name, Method: zip.Store, Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, "#!/bin/sh\n# fixture provider %s %s %s\n", typ, version, plat)
	if size > 0 {
		if _, err := io.CopyN(w, NewPRNG(typ+version+plat), int64(size)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, path, b.Bytes())
}

func writeBinaryZip(t testing.TB, path, typ, version, bin string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	zw := zip.NewWriter(out)
	h := &zip.FileHeader{Name: fmt.Sprintf("terraform-provider-%s_v%s", typ, version), Method: zip.Deflate, Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, err := io.Copy(w, in); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// WriteModuleArchive writes a deterministic .tar.gz of files (path -> content).
func WriteModuleArchive(t testing.TB, path string, files map[string]string) {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Format: tar.FormatPAX})
		tw.Write([]byte(files[n]))
	}
	tw.Close()
	gz.Close()
	WriteFile(t, path, b.Bytes())
}

// WriteFile writes data to path, creating directories.
func WriteFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// FileDigest hashes a file.
func FileDigest(t testing.TB, path string) verify.Digest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, _, err := verify.CopyDigest(io.Discard, f)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Set is a collection of blobs on disk and the catalog they make up.
type Set struct {
	Catalog dist.Catalog
	Files   map[verify.Digest]string // digest -> path
	Roles   map[verify.Digest]string
	// PublisherKeys and Withdraw go into the manifest as they are.
	PublisherKeys []bundle.PublisherKeyDecl
	Withdraw      []dist.Withdrawal
	// Gates are listed in the manifest (AddGate); SBOM, if true, gives the
	// manifest an SBOM (after AddBuildInfo), as export writes one.
	Gates []dist.Gate
	SBOM  bool
}

// NewSet returns an empty Set.
func NewSet() *Set {
	return &Set{Files: map[verify.Digest]string{}, Roles: map[verify.Digest]string{}}
}

// AddProvider adds a built provider's files.
func (s *Set) AddProvider(bp *BuiltProvider) {
	s.Catalog.Providers = append(s.Catalog.Providers, bp.ProviderVersion)
	s.Files[bp.Shasums] = bp.Files[bp.ShasumsName]
	s.Roles[bp.Shasums] = dist.RoleShasums
	s.Files[bp.ShasumsSig] = bp.Files[bp.ShasumsName+".sig"]
	s.Roles[bp.ShasumsSig] = dist.RoleShasumsSig
	for _, pk := range bp.Packages {
		s.Files[pk.Digest] = bp.Files[pk.Filename]
		s.Roles[pk.Digest] = dist.RoleProviderPackage
	}
}

// AddModule adds a module archive at path.
func (s *Set) AddModule(t testing.TB, mv dist.ModuleVersion, path string) {
	t.Helper()
	mv.Archive = FileDigest(t, path)
	fi, _ := os.Stat(path)
	mv.Size = fi.Size()
	s.Catalog.Modules = append(s.Catalog.Modules, mv)
	s.Files[mv.Archive] = path
	s.Roles[mv.Archive] = dist.RoleModuleArchive
	// Its zip, as export writes it.
	zp := path + ".zip"
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(zp)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := modzip.ZipFromTarGz(in, out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	zd := FileDigest(t, zp)
	zfi, _ := os.Stat(zp)
	last := &s.Catalog.Modules[len(s.Catalog.Modules)-1]
	last.Zip, last.ZipSize = zd, zfi.Size()
	s.Files[zd], s.Roles[zd] = zp, dist.RoleModuleZip
}

// Manifest makes the manifest for the set.
func (s *Set) Manifest(t testing.TB) *bundle.Manifest {
	t.Helper()
	m := &bundle.Manifest{Format: bundle.FormatVersion, Tool: "airgap test", Catalog: s.Catalog,
		PublisherKeys: s.PublisherKeys, Withdraw: s.Withdraw, Gates: s.Gates}
	for d, p := range s.Files {
		if s.Roles[d] == dist.RoleSBOM {
			continue // made again below
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: fi.Size(), Role: s.Roles[d]})
	}
	m.Normalize()
	if s.SBOM {
		s.addSBOM(t, m)
	}
	return m
}

// WriteBundle writes a signed bundle of the set to w.
func (s *Set) WriteBundle(t testing.TB, w io.Writer, signer *openpgp.Entity, comp bundle.Compression) *bundle.Manifest {
	return s.WriteBundleAt(t, w, signer, comp, time.Time{})
}

// WriteBundleAt is WriteBundle with a fixed time (as from SOURCE_DATE_EPOCH).
func (s *Set) WriteBundleAt(t testing.TB, w io.Writer, signer *openpgp.Entity, comp bundle.Compression, at time.Time) *bundle.Manifest {
	t.Helper()
	m := s.Manifest(t)
	bw, err := bundle.NewWriter(w, m, signer, bundle.WriterOptions{Compression: comp, ModTime: at})
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.WriteFiles(s.Files); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	return m
}

// WriteBundleFile is WriteBundle to a file.
func (s *Set) WriteBundleFile(t testing.TB, path string, signer *openpgp.Entity, comp bundle.Compression) *bundle.Manifest {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return s.WriteBundle(t, f, signer, comp)
}

// Standard builds a small realistic set: two providers from two origins, two
// platforms each, and a module with a subdirectory. The providers are signed
// by the fixture publisher key (Key(t, "publisher")), not by signer, the
// key that will sign the bundle: a site key is never a publisher key
// (check.Checker refuses that).
func Standard(t testing.TB, dir string, signer *openpgp.Entity) *Set {
	t.Helper()
	pub := Key(t, "publisher")
	if signer == pub {
		t.Fatal("bundletest.Standard: the bundle signer must not be the publisher key")
	}
	s := NewSet()
	s.AddProvider(BuildProvider(t, filepath.Join(dir, "random"), Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.6.0",
		Platforms: []string{"linux_amd64", "darwin_arm64"}, Signer: pub, PackageSize: 64 << 10,
	}))
	s.AddProvider(BuildProvider(t, filepath.Join(dir, "null"), Provider{
		Host: "registry.opentofu.org", Namespace: "hashicorp", Type: "null", Version: "3.2.2",
		Platforms: []string{"linux_amd64", "windows_amd64"}, Signer: pub, PackageSize: 32 << 10,
	}))
	mod := filepath.Join(dir, "mod.tar.gz")
	WriteModuleArchive(t, mod, map[string]string{
		"README.md":             "# vpc\n",
		"modules/vpc/main.tf":   "variable \"name\" {}\noutput \"name\" { value = var.name }\n",
		"modules/vpc/README.md": "sub\n",
	})
	s.AddModule(t, dist.ModuleVersion{Host: "registry.terraform.io", Namespace: "example", Name: "vpc", System: "aws",
		Version: "1.0.0", Subdir: "modules/vpc", Source: "git::https://example.test/vpc.git?ref=v1.0.0"}, mod)
	return s
}

// PRNG is a fast deterministic byte stream (xorshift), for incompressible
// fixture content without holding it in memory.
type PRNG struct{ s uint64 }

// NewPRNG seeds a PRNG from a string.
func NewPRNG(seed string) *PRNG {
	var s uint64 = 0x9E3779B97F4A7C15
	for _, c := range []byte(seed) {
		s = (s ^ uint64(c)) * 0x100000001B3
	}
	if s == 0 {
		s = 1
	}
	return &PRNG{s: s}
}

func (p *PRNG) Read(b []byte) (int, error) {
	for i := range b {
		p.s ^= p.s << 13
		p.s ^= p.s >> 7
		p.s ^= p.s << 17
		b[i] = byte(p.s >> 24)
	}
	return len(b), nil
}
