package dist

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/airgap/airgap/verify"
	version "github.com/hashicorp/go-version"
)

// Blob roles, as recorded in a bundle manifest.
const (
	RoleProviderPackage = "provider-package"
	RoleShasums         = "shasums"
	RoleShasumsSig      = "shasums-signature"
	RoleModuleArchive   = "module-archive"
	// RoleModuleZip is a module's deterministic zip (the same tree as its
	// archive), the layer of its OCI module package.
	RoleModuleZip = "module-zip"
	// RoleGoBuildInfo is the Go build information of a package's plugin
	// binary (dist/goinfo's canonical JSON), Package.BuildInfo. Format 2.
	RoleGoBuildInfo = "go-build-info"
	// RoleGateReport is a gate's report on one entry (GateResult.Report).
	// Format 2.
	RoleGateReport = "gate-report"
	// RoleSBOM is a bundle's CycloneDX SBOM (dist/sbom), referenced from
	// the manifest, not the catalog. Format 2.
	RoleSBOM = "sbom"
	// RoleBundleManifest, RoleBundleSignature and RoleBundleKey are one
	// imported bundle's manifest.json and manifest.json.sig exactly as it
	// came, and the armored public key the importing store checked it
	// with: what a store keeps of every bundle it imports, and what a
	// bundle exported from a store carries onwards as a hop of its chain
	// of custody (bundle.Hop). Referenced from the manifest's chain and the
	// store's import history, not the catalog. Format 3.
	RoleBundleManifest  = "bundle-manifest"
	RoleBundleSignature = "bundle-signature"
	RoleBundleKey       = "bundle-key"
	// RoleApproval is a transfer station's signed approval of a bundle
	// (bundle/approval), kept by the store that accepted it; never in a
	// bundle's manifest. Index format 3.
	RoleApproval = "approval"
)

// Catalog is everything a bundle describes and a store serves. Lists are kept
// sorted (see Sort) so that its JSON form is deterministic.
type Catalog struct {
	Providers []ProviderVersion `json:"providers"`
	Modules   []ModuleVersion   `json:"modules"`
	// Releases (bundle format 3) are Terraform's and OpenTofu's own CLI
	// releases (CLIRelease); absent in bundles and stores without them.
	Releases []CLIRelease `json:"releases,omitempty"`
}

// ProviderVersion is one version of one provider from one origin registry,
// with every platform package exported for it.
type ProviderVersion struct {
	Host      string   `json:"host"`
	Namespace string   `json:"namespace"`
	Type      string   `json:"type"`
	Version   string   `json:"version"`
	Protocols []string `json:"protocols,omitempty"`
	// The publisher's SHA256SUMS file and detached signature, byte for byte.
	ShasumsName string        `json:"shasums_name"`
	Shasums     verify.Digest `json:"shasums"`
	ShasumsSig  verify.Digest `json:"shasums_signature"`
	// SigningKeys are the keys the origin registry listed for this version.
	SigningKeys []SigningKey `json:"signing_keys"`
	// SiteSigned is true when the origin listed no key and ShasumsSig is a
	// signature by the exporting site's key (which is then in SigningKeys).
	SiteSigned bool `json:"site_signed,omitempty"`
	// MirrorHashesOnly (bundle format 2) marks packages that came from a
	// network mirror while the origin registry could not be reached to
	// vouch for them ('airgap export --trust-mirror-hashes'): nothing the
	// publisher signed covers them, only the hashes the mirror listed
	// (Package.MirrorHashes), which each package matched. Shasums is then a
	// SHA256SUMS that export wrote of exactly the carried packages, signed
	// by the exporting site's key (the only key in SigningKeys), so that
	// the registry protocol can serve them; SiteSigned stays false (it
	// means a publisher's own SHA256SUMS, re-signed). Mirror is the
	// mirror's URL. See Trust.
	MirrorHashesOnly bool      `json:"mirror_hashes_only,omitempty"`
	Mirror           string    `json:"mirror,omitempty"`
	Packages         []Package `json:"packages"`
	// Docs (bundle format 3) is the version's documentation, or why it
	// is missing (dist/docs); nil in bundles and stores made before airgap
	// carried documentation, and when the export was told docs = false.
	Docs *ProviderDocs `json:"docs,omitempty"`
}

// Trust says what vouches for p's packages: its trust tier, TrustPublisher,
// TrustSite or TrustMirror (see NamespaceKeys).
func (p ProviderVersion) Trust() string {
	switch {
	case p.MirrorHashesOnly:
		return TrustMirror
	case p.SiteSigned:
		return TrustSite
	}
	return TrustPublisher
}

// TrustLabel is a trust tier for people: "publisher-signed", "site
// re-signed", "mirror hashes only" (an unknown tier is shown as it is).
func TrustLabel(tier string) string {
	switch tier {
	case TrustPublisher:
		return "publisher-signed"
	case TrustSite:
		return "site re-signed"
	case TrustMirror:
		return "mirror hashes only"
	}
	return tier
}

// Package is one platform's provider zip, kept byte-identical to upstream.
type Package struct {
	OS       string        `json:"os"`
	Arch     string        `json:"arch"`
	Filename string        `json:"filename"`
	Digest   verify.Digest `json:"digest"` // sha256 of the zip: the zh: hash
	Size     int64         `json:"size"`
	H1       string        `json:"h1"` // dirhash.HashZip(zip, Hash1)
	// MirrorHashes (bundle format 2, with ProviderVersion.MirrorHashesOnly)
	// are the h1: and zh: hashes the network mirror listed for this
	// package; H1 or ZH() is among them.
	MirrorHashes []string `json:"mirror_hashes,omitempty"`
	// BuildInfo is the Go build information of the plugin binary (a
	// RoleGoBuildInfo blob, goinfo.Encode of what the zip holds): empty in
	// bundles and stores made before airgap recorded it. Format 2.
	BuildInfo verify.Digest `json:"build_info,omitempty"`
	// Gates are the export's gate results on this package's plugin
	// (gates for providers). Format 2.
	Gates []GateResult `json:"gates,omitempty"`
}

// SigningKey is a provider registry signing key.
type SigningKey struct {
	KeyID          string `json:"key_id"`
	ASCIIArmor     string `json:"ascii_armor"`
	TrustSignature string `json:"trust_signature,omitempty"`
	Source         string `json:"source,omitempty"`
	SourceURL      string `json:"source_url,omitempty"`
}

// ModuleVersion is one version of one registry module, stored as a
// normalized archive of the whole source root plus a subdirectory.
type ModuleVersion struct {
	Host      string        `json:"host"`
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	System    string        `json:"system"`
	Version   string        `json:"version"`
	Archive   verify.Digest `json:"archive"` // a .tar.gz
	Size      int64         `json:"size"`
	Subdir    string        `json:"subdir,omitempty"`
	Source    string        `json:"source,omitempty"` // where it was fetched from
	Commit    string        `json:"commit,omitempty"` // pinned git commit, if any
	// Zip is the same tree as Archive as a deterministic zip (modzip.ZipFromTarGz),
	// for OpenTofu's oci:// module sources. Empty in bundles made before
	// airgap wrote it.
	Zip     verify.Digest `json:"zip,omitempty"`
	ZipSize int64         `json:"zip_size,omitempty"`
	// Vendored lists every module source export rewrote in this archive
	// (see dist/vendor): absent when nothing was vendored.
	Vendored []VendoredCall `json:"vendored,omitempty"`
	// Gates are the export's gate results on this module version's tree
	// (gates for modules). Format 2.
	Gates []GateResult `json:"gates,omitempty"`
	// Docs (bundle format 3) is the module's documentation, a blob of role
	// RoleModuleDocs (ModuleDocs as JSON); empty when none was made.
	Docs verify.Digest `json:"docs,omitempty"`
}

// VendoredCall is one rewritten module source: a non-registry source that
// export fetched and copied into the calling module's archive.
type VendoredCall struct {
	File   string        `json:"file"`   // the calling file, a slash path in the archive
	Line   int           `json:"line"`   // of the source argument
	Module string        `json:"module"` // the module block's name
	Source string        `json:"source"` // as written by the module's author
	Digest verify.Digest `json:"digest"` // the fetched package's normalized archive
	Commit string        `json:"commit,omitempty"`
	Path   string        `json:"path"` // the local path written instead
}

// Platform is "os_arch".
func (p Package) Platform() string { return p.OS + "_" + p.Arch }

// ZH is the zh: lock-file hash of the package.
func (p Package) ZH() string { return "zh:" + p.Digest.Hex() }

// Addr is "host/namespace/type".
func (p ProviderVersion) Addr() string { return p.Host + "/" + p.Namespace + "/" + p.Type }

func (p ProviderVersion) String() string { return p.Addr() + " " + p.Version }

// Package returns the package for os/arch, if exported.
func (p ProviderVersion) Package(os, arch string) (Package, bool) {
	for _, pk := range p.Packages {
		if pk.OS == os && pk.Arch == arch {
			return pk, true
		}
	}
	return Package{}, false
}

// Addr is "host/namespace/name/system".
func (m ModuleVersion) Addr() string {
	return m.Host + "/" + m.Namespace + "/" + m.Name + "/" + m.System
}

func (m ModuleVersion) String() string { return m.Addr() + " " + m.Version }

var (
	reHost      = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$`)
	reProvName  = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$`)
	reProvType  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	reModName   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?$`)
	rePlatform  = regexp.MustCompile(`^[a-z0-9]+$`)
	reFilename  = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
	reSubdir    = regexp.MustCompile(`^[A-Za-z0-9._+@=/-]*$`)
	reProtocols = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	reH1        = regexp.MustCompile(`^h1:[A-Za-z0-9+/]{43}=$`) // base64 of a sha256
	reZH        = regexp.MustCompile(`^zh:[0-9a-f]{64}$`)
)

// MaxMirrorHashes bounds Package.MirrorHashes.
const MaxMirrorHashes = 16

// ValidHost reports whether s is a lowercase (punycode) host name with an
// optional port.
func ValidHost(s string) bool { return len(s) <= 253 && reHost.MatchString(s) }

// ValidProviderName reports whether s may be a provider namespace or type
// in a catalog: lowercase letters, digits, dashes and underscores, neither
// first nor last, at most 64. It is the union of what the clients accept in
// either part, so that every store and bundle an earlier airgap wrote still
// reads; addresses users write go through ParseProviderSource, which holds
// each part to its own rule (validProviderNamespace, validProviderType).
func ValidProviderName(s string) bool { return len(s) <= 64 && reProvName.MatchString(s) }

// validProviderNamespace reports whether s (lowercase) is a provider
// namespace as Terraform 1.16 accepts it: letters, digits, dashes and
// underscores, starting and ending with a letter or digit, at most 64
// characters (terraform-registry-address's provider name pattern).
// Terraform before 1.16 and OpenTofu (through 1.12) still refuse
// underscores; they simply never ask for such a namespace.
func validProviderNamespace(s string) bool { return ValidProviderName(s) }

// validProviderType reports whether s (lowercase) is a provider type as
// every client accepts it: letters, digits and dashes, no dash first or
// last and no two in a row, at most 64. Underscores stay out of types
// (Terraform 1.16 allows them in namespaces only; a type also names the
// package file, terraform-provider-TYPE_VERSION_OS_ARCH.zip, whose parts
// "_" separates).
func validProviderType(s string) bool {
	return len(s) <= 64 && reProvType.MatchString(s) && !strings.Contains(s, "--")
}

// validModuleName reports whether s is a valid module namespace, name or system.
func validModuleName(s string) bool { return len(s) <= 64 && reModName.MatchString(s) }

// ValidPlatformPart reports whether s is a valid os or arch.
func ValidPlatformPart(s string) bool { return len(s) <= 32 && rePlatform.MatchString(s) }

// reSemver is the regular expression semver.org gives for SemVer 2.0.0.
var reSemver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// ValidVersion reports whether s is a semantic version (SemVer 2.0.0:
// MAJOR.MINOR.PATCH, optional pre-release; no "v"), as the registry
// protocols require, without build metadata: Terraform and OpenTofu ignore
// it when they compare versions, so "3.6.0+x" next to "3.6.0" would be a
// twin served under one version, and registries do not publish it.
func ValidVersion(s string) bool {
	return len(s) <= 128 && reSemver.MatchString(s) && !strings.Contains(s, "+")
}

// HasBuildMetadata reports whether s is a semantic version with build
// metadata ("3.6.0+x"), which ValidVersion refuses.
func HasBuildMetadata(s string) bool {
	return len(s) <= 128 && reSemver.MatchString(s) && strings.Contains(s, "+")
}

// ProviderShasumsName is the name every provider registry (HashiCorp's
// releases, OpenTofu's, the registry publishing requirements) gives a
// provider version's SHA256SUMS file.
func ProviderShasumsName(typ, version string) string {
	return "terraform-provider-" + typ + "_" + version + "_SHA256SUMS"
}

// ProviderPackageName is the name every provider registry gives a provider
// version's zip for os/arch. It ties the publisher's signed SHA256SUMS line
// to the type, version and platform the package is listed under.
func ProviderPackageName(typ, version, os, arch string) string {
	return "terraform-provider-" + typ + "_" + version + "_" + os + "_" + arch + ".zip"
}

// reservedHostError is the refusal of a provider or module whose host is
// ReleaseHost.
func reservedHostError(kind, what string) error {
	return fmt.Errorf("%s %s: the host %s is reserved for Terraform's and OpenTofu's own releases; no registry has it\nhint: a bundle with it was not exported from a registry; refuse it and ask who made it", kind, what, ReleaseHost)
}

// Validate checks every name in the catalog, and that each blob it refers to
// is in blobs with the right role. blobs may be nil to skip that check.
func (c *Catalog) Validate(blobs map[verify.Digest]string) error {
	ref := func(what string, d verify.Digest, role string) error {
		if _, err := verify.ParseDigest(string(d)); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if blobs == nil {
			return nil
		}
		got, ok := blobs[d]
		if !ok {
			return fmt.Errorf("%s: blob %s is not listed in the manifest", what, d.Short())
		}
		if got != role {
			return fmt.Errorf("%s: blob %s has role %q, want %q", what, d.Short(), got, role)
		}
		return nil
	}
	for _, p := range c.Providers {
		if !ValidHost(p.Host) || !ValidProviderName(p.Namespace) || !ValidProviderName(p.Type) || !ValidVersion(p.Version) {
			return fmt.Errorf("invalid provider address or version %q", p.String())
		}
		if p.Host == ReleaseHost {
			return reservedHostError("provider", p.String())
		}
		if !reFilename.MatchString(p.ShasumsName) {
			return fmt.Errorf("%s: invalid SHA256SUMS file name %q", p, p.ShasumsName)
		}
		for _, pr := range p.Protocols {
			if !reProtocols.MatchString(pr) {
				return fmt.Errorf("%s: invalid protocol version %q", p, pr)
			}
		}
		if err := ref(p.String()+" SHA256SUMS", p.Shasums, RoleShasums); err != nil {
			return err
		}
		if err := ref(p.String()+" SHA256SUMS signature", p.ShasumsSig, RoleShasumsSig); err != nil {
			return err
		}
		if len(p.Packages) == 0 {
			return fmt.Errorf("%s: no packages", p)
		}
		seen := map[string]bool{}
		for _, pk := range p.Packages {
			if !ValidPlatformPart(pk.OS) || !ValidPlatformPart(pk.Arch) {
				return fmt.Errorf("%s: invalid platform %q", p, pk.Platform())
			}
			if seen[pk.Platform()] {
				return fmt.Errorf("%s: platform %s listed twice", p, pk.Platform())
			}
			seen[pk.Platform()] = true
			if !reFilename.MatchString(pk.Filename) {
				return fmt.Errorf("%s %s: invalid filename %q", p, pk.Platform(), pk.Filename)
			}
			if !reH1.MatchString(pk.H1) {
				return fmt.Errorf("%s %s: invalid h1 hash %q", p, pk.Platform(), pk.H1)
			}
			if err := ref(p.String()+" "+pk.Platform(), pk.Digest, RoleProviderPackage); err != nil {
				return err
			}
			if len(pk.MirrorHashes) > MaxMirrorHashes {
				return fmt.Errorf("%s %s: %d mirror hashes (at most %d)", p, pk.Platform(), len(pk.MirrorHashes), MaxMirrorHashes)
			}
			for _, h := range pk.MirrorHashes {
				if !reH1.MatchString(h) && !reZH.MatchString(h) {
					return fmt.Errorf("%s %s: invalid mirror hash %q", p, pk.Platform(), Printable(h))
				}
			}
			if pk.BuildInfo != "" {
				if err := ref(p.String()+" "+pk.Platform()+" Go build information", pk.BuildInfo, RoleGoBuildInfo); err != nil {
					return err
				}
			}
			if err := validateGateResults(p.String()+" "+pk.Platform(), pk.Gates, ref); err != nil {
				return err
			}
		}
		if err := p.Docs.Validate(p.String(), ref); err != nil {
			return err
		}
		if p.Mirror != "" && (len(p.Mirror) > 2048 || Printable(p.Mirror) != p.Mirror || !strings.HasPrefix(p.Mirror, "https://")) {
			return fmt.Errorf("%s: invalid mirror URL %q", p, Printable(p.Mirror))
		}
	}
	for _, m := range c.Modules {
		if !ValidHost(m.Host) || !validModuleName(m.Namespace) || !validModuleName(m.Name) || !validModuleName(m.System) || !ValidVersion(m.Version) {
			return fmt.Errorf("invalid module address or version %q", m.String())
		}
		if m.Host == ReleaseHost {
			return reservedHostError("module", m.String())
		}
		if !reSubdir.MatchString(m.Subdir) || strings.HasPrefix(m.Subdir, "/") || strings.Contains("/"+m.Subdir+"/", "/../") {
			return fmt.Errorf("%s: invalid subdirectory %q", m, m.Subdir)
		}
		if err := ref(m.String(), m.Archive, RoleModuleArchive); err != nil {
			return err
		}
		if m.Zip != "" {
			if err := ref(m.String()+" zip", m.Zip, RoleModuleZip); err != nil {
				return err
			}
		}
		for _, v := range m.Vendored { // a record for reviewers, one inventory line each: no newline or escape may forge another
			printable := Printable(v.File) == v.File && Printable(v.Module) == v.Module && Printable(v.Source) == v.Source && Printable(v.Path) == v.Path && Printable(v.Commit) == v.Commit
			local := strings.HasPrefix(v.Path, "./") || strings.HasPrefix(v.Path, "../")
			if _, err := verify.ParseDigest(string(v.Digest)); err != nil || v.Line < 0 || !printable || !local {
				return fmt.Errorf("%s: invalid vendored source record at %q", m, Printable(v.File))
			}
		}
		if err := validateGateResults(m.String(), m.Gates, ref); err != nil {
			return err
		}
		if m.Docs != "" {
			if err := ref(m.String()+" docs", m.Docs, RoleModuleDocs); err != nil {
				return err
			}
		}
	}
	return c.validateReleases(ref)
}

// Sort puts the catalog in its canonical order.
func (c *Catalog) Sort() {
	sort.Slice(c.Providers, func(i, j int) bool {
		a, b := c.Providers[i], c.Providers[j]
		if a.Addr() != b.Addr() {
			return a.Addr() < b.Addr()
		}
		return CompareVersions(a.Version, b.Version) < 0
	})
	for i := range c.Providers {
		ps := c.Providers[i].Packages
		sort.Slice(ps, func(i, j int) bool { return ps[i].Platform() < ps[j].Platform() })
	}
	sort.Slice(c.Modules, func(i, j int) bool {
		a, b := c.Modules[i], c.Modules[j]
		if la, lb := strings.ToLower(a.Addr()), strings.ToLower(b.Addr()); la != lb {
			return la < lb
		}
		return CompareVersions(a.Version, b.Version) < 0
	})
	sortReleases(c.Releases)
}

// CompareVersions orders semantic versions, falling back to string order for
// anything unparsable.
func CompareVersions(a, b string) int {
	va, ea := version.NewVersion(a)
	vb, eb := version.NewVersion(b)
	if ea != nil || eb != nil {
		return strings.Compare(a, b)
	}
	return va.Compare(vb)
}

// canonicalVersion is v in go-version's canonical form ("1.0" and "1.0.0"
// are one version), without build metadata (clients ignore it when they
// compare versions), lower case; v itself if it does not parse.
func canonicalVersion(v string) string {
	if sv, err := version.NewSemver(v); err == nil {
		v = sv.Core().String()
		if pre := sv.Prerelease(); pre != "" {
			v += "-" + pre
		}
	}
	return strings.ToLower(v)
}

// Key identifies a provider version the way registries and clients compare
// them: case-insensitively, by canonical version. Two entries with one Key
// in a catalog are duplicates.
func (p ProviderVersion) Key() string {
	return canonicalAddr(p.Addr()) + " " + canonicalVersion(p.Version)
}

// Key identifies a module version case-insensitively, by canonical version.
func (m ModuleVersion) Key() string {
	return canonicalAddr(m.Addr()) + " " + canonicalVersion(m.Version)
}

// CheckMerge reports whether next can be merged into c without changing
// anything c already serves: a provider version both have must be spelled
// the same, list the same SHA256SUMS, keep its site re-signature mark and have
// the same package (filename, digest, h1) for every platform both list (next
// may add platforms; its signature and keys, checked by the caller, replace
// c's); a module version both have must have the same archive and
// subdirectory, and the same zip where both list one (a bundle from before
// module zips may omit it). The error names the first conflict.
//
// One exception: a version c has with mirror hashes only (a SHA256SUMS the
// exporting site wrote) may be replaced by next's with another SHA256SUMS —
// its publisher's, or the site's of a later export — if next carries every
// platform c has, with the same bytes: what clients get stays the same, and
// what vouches for it can only grow. The reverse, mirror hashes only in
// place of a publisher's signature, is refused.
func (c *Catalog) CheckMerge(next *Catalog) error {
	provs := make(map[string]*ProviderVersion, len(c.Providers))
	for i := range c.Providers {
		provs[c.Providers[i].Key()] = &c.Providers[i]
	}
	for i := range next.Providers {
		if old, ok := provs[next.Providers[i].Key()]; ok {
			if err := checkProviderMerge(old, &next.Providers[i]); err != nil {
				return err
			}
		}
	}
	mods := make(map[string]*ModuleVersion, len(c.Modules))
	for i := range c.Modules {
		mods[c.Modules[i].Key()] = &c.Modules[i]
	}
	for _, nm := range next.Modules {
		old, ok := mods[nm.Key()]
		switch {
		case !ok:
		case old.Archive != nm.Archive || old.Subdir != nm.Subdir:
			return fmt.Errorf("module %s: the bundle's archive %s (subdirectory %q) differs from the store's %s %s (subdirectory %q)",
				nm, nm.Archive.Short(), nm.Subdir, old, old.Archive.Short(), old.Subdir)
		case old.Zip != "" && nm.Zip != "" && old.Zip != nm.Zip:
			return fmt.Errorf("module %s: the bundle's zip %s differs from the store's %s", nm, nm.Zip.Short(), old.Zip.Short())
		}
	}
	return c.checkReleaseMerge(next)
}

// checkProviderMerge is CheckMerge for one provider version both have.
func checkProviderMerge(old, np *ProviderVersion) error {
	switch {
	case old.String() != np.String():
		return fmt.Errorf("provider %s: the store has it spelled %s", np, old)
	case old.SiteSigned != np.SiteSigned:
		return fmt.Errorf("provider %s: the store has it %s, the bundle %s", np, signedBy(old.SiteSigned), signedBy(np.SiteSigned))
	case np.MirrorHashesOnly && !old.MirrorHashesOnly:
		return fmt.Errorf("provider %s: the store serves it %s; the bundle carries it with mirror hashes only, which cannot replace that\nhint: export it again where the origin registry can be reached (without --trust-mirror-hashes)", np, TrustLabel(old.Trust()))
	case old.Shasums != np.Shasums && old.MirrorHashesOnly:
		for _, pk := range old.Packages {
			if got, ok := np.Package(pk.OS, pk.Arch); !ok || got.Digest != pk.Digest || got.Filename != pk.Filename || got.H1 != pk.H1 {
				return fmt.Errorf("provider %s: the store serves it with mirror hashes only, including %s (%s); the bundle does not carry that package with the same bytes, so its SHA256SUMS cannot replace the store's\nhint: export every platform the store has of it in one bundle", np, pk.Platform(), pk.Digest.Short())
			}
		}
	case old.Shasums != np.Shasums:
		return fmt.Errorf("provider %s: its SHA256SUMS (%s) differs from the one the store serves (%s)", np, np.Shasums.Short(), old.Shasums.Short())
	}
	for _, pk := range np.Packages {
		prev, ok := old.Package(pk.OS, pk.Arch)
		if ok && (prev.Digest != pk.Digest || prev.Filename != pk.Filename || prev.H1 != pk.H1) {
			return fmt.Errorf("provider %s %s: the bundle's package %s (%s, %s) differs from the store's %s (%s, %s)",
				np, pk.Platform(), pk.Filename, pk.Digest.Short(), pk.H1, prev.Filename, prev.Digest.Short(), prev.H1)
		}
	}
	return nil
}

func signedBy(site bool) string {
	if site {
		return "re-signed by a site key"
	}
	return "signed by its publisher"
}

// Merge adds next into c (c is changed). A provider version present in both
// (by Key) gets the union of platforms, next winning for a platform in both;
// a module version present in both is replaced by next's. Callers that must
// not change what c serves check CheckMerge first. It returns what next added
// that c did not have, as human-readable lines.
func (c *Catalog) Merge(next *Catalog) (added []string) {
	pidx := map[string]int{}
	for i, p := range c.Providers {
		pidx[p.Key()] = i
	}
	for _, np := range next.Providers {
		i, ok := pidx[np.Key()]
		if !ok {
			c.Providers = append(c.Providers, np)
			pidx[np.Key()] = len(c.Providers) - 1
			plats := make([]string, 0, len(np.Packages))
			for _, pk := range np.Packages {
				plats = append(plats, pk.Platform())
			}
			added = append(added, fmt.Sprintf("provider %s (%s)", np, strings.Join(plats, ", ")))
			continue
		}
		old := c.Providers[i]
		merged := np
		merged.Packages = append([]Package(nil), np.Packages...)
		for j, pk := range merged.Packages {
			if prev, ok := old.Package(pk.OS, pk.Arch); ok && prev.Digest == pk.Digest {
				merged.Packages[j] = mergePackage(prev, pk)
			}
		}
		for _, pk := range old.Packages {
			if _, ok := np.Package(pk.OS, pk.Arch); !ok {
				merged.Packages = append(merged.Packages, pk)
			}
		}
		for _, pk := range np.Packages {
			if prev, ok := old.Package(pk.OS, pk.Arch); !ok || prev.Digest != pk.Digest {
				added = append(added, fmt.Sprintf("provider %s %s", np, pk.Platform()))
			}
		}
		if old.Trust() != np.Trust() {
			added = append(added, fmt.Sprintf("provider %s (now %s; it was %s)", np, TrustLabel(np.Trust()), TrustLabel(old.Trust())))
		}
		if merged.Docs == nil || merged.Docs.Archive == "" && old.Docs != nil && old.Docs.Archive != "" {
			// A bundle without docs (an older one, docs = false, or a
			// fetch that failed) keeps the docs the store has.
			merged.Docs = cmpOr(old.Docs, merged.Docs)
		}
		c.Providers[i] = merged
	}
	midx := map[string]int{}
	for i, m := range c.Modules {
		midx[m.Key()] = i
	}
	for _, nm := range next.Modules {
		key := nm.Key()
		if i, ok := midx[key]; ok {
			if nm.Zip == "" && c.Modules[i].Archive == nm.Archive {
				// A bundle from before module zips keeps the zip the store has.
				nm.Zip, nm.ZipSize = c.Modules[i].Zip, c.Modules[i].ZipSize
			}
			if c.Modules[i].Archive != nm.Archive || c.Modules[i].Subdir != nm.Subdir {
				added = append(added, "module "+nm.String()+" (replaced)")
			} else {
				nm.Gates = mergeGateResults(c.Modules[i].Gates, nm.Gates)
				if nm.Docs == "" {
					nm.Docs = c.Modules[i].Docs
				}
			}
			c.Modules[i] = nm
			continue
		}
		c.Modules = append(c.Modules, nm)
		midx[key] = len(c.Modules) - 1
		added = append(added, "module "+nm.String())
	}
	added = append(added, c.mergeReleases(next)...)
	c.Sort()
	return added
}

// Blobs lists every blob the catalog refers to, with its role.
func (c *Catalog) Blobs() map[verify.Digest]string {
	out := map[verify.Digest]string{}
	reports := func(rs []GateResult) {
		for _, r := range rs {
			out[r.Report] = RoleGateReport
		}
	}
	for _, p := range c.Providers {
		out[p.Shasums] = RoleShasums
		out[p.ShasumsSig] = RoleShasumsSig
		for _, pk := range p.Packages {
			out[pk.Digest] = RoleProviderPackage
			if pk.BuildInfo != "" {
				out[pk.BuildInfo] = RoleGoBuildInfo
			}
			reports(pk.Gates)
		}
		if p.Docs != nil && p.Docs.Archive != "" {
			out[p.Docs.Archive] = RoleProviderDocs
		}
	}
	for _, m := range c.Modules {
		if m.Docs != "" {
			out[m.Docs] = RoleModuleDocs
		}
		out[m.Archive] = RoleModuleArchive
		if m.Zip != "" {
			out[m.Zip] = RoleModuleZip
		}
		reports(m.Gates)
	}
	c.releaseBlobs(out)
	return out
}

// mergePackage is a package a store already had (prev), carried again by a
// bundle (next, the same zip): next's record, keeping prev's build
// information if next has none (a bundle from before it was recorded), and
// the gate results of both (mergeGateResults).
func mergePackage(prev, next Package) Package {
	if next.BuildInfo == "" {
		next.BuildInfo = prev.BuildInfo
	}
	next.Gates = mergeGateResults(prev.Gates, next.Gates)
	return next
}

// mergeGateResults is the gate results of an entry after a bundle that
// carries it again is imported: the newer result of each gate, and the
// older results of gates the bundle did not run. Sorted by gate name.
func mergeGateResults(older, newer []GateResult) []GateResult {
	if len(older) == 0 {
		return newer
	}
	out := append([]GateResult(nil), newer...)
	for _, o := range older {
		found := false
		for _, n := range newer {
			if n.Gate == o.Gate {
				found = true
			}
		}
		if !found {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Gate < out[j].Gate })
	return out
}

// cmpOr is the first of a, b that is not nil.
func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}
