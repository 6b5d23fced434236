package dist

import (
	"fmt"
	"sort"
	"strings"

	"github.com/airgap/airgap/verify"
)

// Blob roles of the Terraform and OpenTofu CLI releases a catalog carries
// (Catalog.Releases), each the publisher's file byte for byte.
const (
	RoleReleaseZip       = "release-zip"
	RoleReleaseShasums   = "release-shasums"
	RoleReleaseSignature = "release-shasums-signature"
	// RoleReleaseKey is the armored public key of the release's publisher
	// (the one the default pin or the manifest's publisher_key named).
	RoleReleaseKey = "release-publisher-key"
)

// The products whose CLI releases airgap carries.
const (
	ProductTerraform = "terraform"
	ProductTofu      = "tofu"
)

// Pins of a release's publisher key (CLIRelease.KeyPin).
const (
	// KeyPinDefault: the key is the publisher's, pinned by fingerprint in
	// airgap itself (DefaultReleaseKey).
	KeyPinDefault = "default"
	// KeyPinManifest: the export manifest's publisher_key named the key
	// (a site that re-signs releases, or a test's stand-in publisher); the
	// bundle's signature is what vouches for that choice.
	KeyPinManifest = "manifest"
)

// DefaultReleaseKey is the fingerprint of the key each product's publisher
// signs its SHA256SUMS with: HashiCorp's security key, and OpenTofu's
// release key.
func DefaultReleaseKey(product string) string {
	switch product {
	case ProductTerraform:
		return "C874011F0AB405110D02105534365D9472D7468F"
	case ProductTofu:
		return "E3E6E43D84CB852EADB0051D0C0AF313E5FD9F80"
	}
	return ""
}

// ReleaseKeyNamespace is the namespace under which a transfer station's
// approval names a new publisher key for product's releases
// (approval.PublisherKey): a host under .invalid (RFC 2606), which no
// registry can have, so that no provider namespace is ever the same.
func ReleaseKeyNamespace(product string) string { return ReleaseHost + "/" + product }

// ReleaseHost is the host of ReleaseKeyNamespace, and of the names the
// usage file and access rules give releases. No provider or module may
// have it (Catalog.Validate): one that did would be counted as a release,
// admitted by a rule meant for releases, and share its namespace with a
// release's accepted key.
const ReleaseHost = "cli.airgap.invalid"

// MaxReleaseBuilds bounds the builds of one release a catalog may list
// (HashiCorp publishes about 15 platforms a Terraform release).
const MaxReleaseBuilds = 64

// MaxReleaseSignatures bounds the signature files of one release (HashiCorp
// publishes two: .sig and .72D7468F.sig).
const MaxReleaseSignatures = 4

// MaxReleaseKeySize bounds a release's armored publisher key.
const MaxReleaseKeySize = 256 << 10

// CLIRelease is one version of the terraform or tofu command-line tool,
// as its publisher released it: the zips of the exported platforms, the
// SHA256SUMS that lists them and its detached signatures, all byte for
// byte, and the publisher key the signatures were checked against.
type CLIRelease struct {
	Product string `json:"product"` // ProductTerraform or ProductTofu
	Version string `json:"version"`
	// ShasumsName is PRODUCT_VERSION_SHA256SUMS, as the publisher names it.
	ShasumsName string        `json:"shasums_name"`
	Shasums     verify.Digest `json:"shasums"`
	// Signatures are the detached signatures of Shasums, by file name
	// (terraform_V_SHA256SUMS.sig and .72D7468F.sig; tofu_V_SHA256SUMS.gpgsig).
	Signatures []ReleaseSignature `json:"signatures"`
	// Key is the publisher's armored public key (a RoleReleaseKey blob),
	// KeyFingerprint its primary key's fingerprint (upper-case hex), and
	// KeyPin who pinned it (KeyPinDefault or KeyPinManifest).
	Key            verify.Digest  `json:"key"`
	KeyFingerprint string         `json:"key_fingerprint"`
	KeyPin         string         `json:"key_pin"`
	Builds         []ReleaseBuild `json:"builds"`
}

// ReleaseSignature is one detached signature file of a release's SHA256SUMS.
type ReleaseSignature struct {
	Name   string        `json:"name"`
	Digest verify.Digest `json:"digest"`
}

// ReleaseBuild is one platform's archive of a release: its zip, and for
// OpenTofu also its .tar.gz (tofudl installs that one).
type ReleaseBuild struct {
	OS       string        `json:"os"`
	Arch     string        `json:"arch"`
	Filename string        `json:"filename"`
	Digest   verify.Digest `json:"digest"`
	Size     int64         `json:"size"`
}

// Platform is "os_arch".
func (b ReleaseBuild) Platform() string { return b.OS + "_" + b.Arch }

func (r CLIRelease) String() string { return r.Product + " " + r.Version }

// ReleaseKey identifies a release by product and canonical version, as
// VersionKey does a provider or module version (a withdrawal's keys).
func (r CLIRelease) ReleaseKey() string { return r.Product + " " + canonicalVersion(r.Version) }

// ReleaseShasumsName is the name both publishers give a release's SHA256SUMS.
func ReleaseShasumsName(product, version string) string {
	return product + "_" + version + "_SHA256SUMS"
}

// ReleaseZipName is the name both publishers give a release's zip for os/arch:
// it ties the signed SHA256SUMS line to the product, version and platform.
func ReleaseZipName(product, version, os, arch string) string {
	return product + "_" + version + "_" + os + "_" + arch + ".zip"
}

// ReleaseTarName is OpenTofu's other archive of a release for os/arch, a
// .tar.gz of the same files, which tofudl installs.
func ReleaseTarName(version, os, arch string) string {
	return ProductTofu + "_" + version + "_" + os + "_" + arch + ".tar.gz"
}

// ReleaseSignatureNames are the signature file names a release of product
// may carry: HashiCorp's two names for the signature by its key, and
// OpenTofu's GPG signature.
func ReleaseSignatureNames(product, version string) []string {
	s := ReleaseShasumsName(product, version)
	if product == ProductTofu {
		return []string{s + ".gpgsig"}
	}
	return []string{s + ".sig", s + ".72D7468F.sig"}
}

// Build returns the build whose file is named filename, if carried.
func (r CLIRelease) Build(filename string) (ReleaseBuild, bool) {
	for _, b := range r.Builds {
		if b.Filename == filename {
			return b, true
		}
	}
	return ReleaseBuild{}, false
}

// validateReleases is Validate for c.Releases: names, versions, file names
// as the publishers give them, bounds on builds and signatures, and every
// blob of the right role (ref).
func (c *Catalog) validateReleases(ref func(what string, d verify.Digest, role string) error) error {
	seen := map[string]bool{}
	for _, r := range c.Releases {
		if r.Product != ProductTerraform && r.Product != ProductTofu || !ValidVersion(r.Version) {
			return fmt.Errorf("invalid release %q", Printable(r.Product+" "+r.Version))
		}
		if seen[r.ReleaseKey()] {
			return fmt.Errorf("release %s listed twice", r)
		}
		seen[r.ReleaseKey()] = true
		if r.ShasumsName != ReleaseShasumsName(r.Product, r.Version) {
			return fmt.Errorf("release %s: its SHA256SUMS is named %q, not %s", r, Printable(r.ShasumsName), ReleaseShasumsName(r.Product, r.Version))
		}
		if err := ref("release "+r.String()+" SHA256SUMS", r.Shasums, RoleReleaseShasums); err != nil {
			return err
		}
		if err := ref("release "+r.String()+" publisher key", r.Key, RoleReleaseKey); err != nil {
			return err
		}
		if _, err := verify.ParseFingerprint(r.KeyFingerprint); err != nil || strings.ToUpper(r.KeyFingerprint) != r.KeyFingerprint {
			return fmt.Errorf("release %s: invalid key fingerprint %q", r, Printable(r.KeyFingerprint))
		}
		if r.KeyPin != KeyPinDefault && r.KeyPin != KeyPinManifest {
			return fmt.Errorf("release %s: invalid key pin %q", r, Printable(r.KeyPin))
		}
		if len(r.Signatures) == 0 || len(r.Signatures) > MaxReleaseSignatures {
			return fmt.Errorf("release %s: %d signatures (1 to %d)", r, len(r.Signatures), MaxReleaseSignatures)
		}
		names := ReleaseSignatureNames(r.Product, r.Version)
		sigSeen := map[string]bool{}
		for _, s := range r.Signatures {
			ok := false
			for _, n := range names {
				ok = ok || s.Name == n
			}
			if !ok || sigSeen[s.Name] {
				return fmt.Errorf("release %s: signature file %q is not one of %s, once", r, Printable(s.Name), strings.Join(names, ", "))
			}
			sigSeen[s.Name] = true
			if err := ref("release "+r.String()+" "+s.Name, s.Digest, RoleReleaseSignature); err != nil {
				return err
			}
		}
		if len(r.Builds) == 0 || len(r.Builds) > MaxReleaseBuilds {
			return fmt.Errorf("release %s: %d builds (1 to %d)", r, len(r.Builds), MaxReleaseBuilds)
		}
		files := map[string]bool{}
		for _, b := range r.Builds {
			if !ValidPlatformPart(b.OS) || !ValidPlatformPart(b.Arch) {
				return fmt.Errorf("release %s: invalid platform %q", r, Printable(b.Platform()))
			}
			zip := ReleaseZipName(r.Product, r.Version, b.OS, b.Arch)
			if b.Filename != zip && (r.Product != ProductTofu || b.Filename != ReleaseTarName(r.Version, b.OS, b.Arch)) || files[b.Filename] {
				return fmt.Errorf("release %s %s: the archive %q is not %s (or OpenTofu's .tar.gz of it), once", r, b.Platform(), Printable(b.Filename), zip)
			}
			files[b.Filename] = true
			if b.Size < 0 {
				return fmt.Errorf("release %s %s: negative size", r, b.Platform())
			}
			if err := ref("release "+r.String()+" "+b.Platform(), b.Digest, RoleReleaseZip); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortReleases puts releases in canonical order: by product, then version;
// their builds by platform, signatures by name.
func sortReleases(rs []CLIRelease) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Product != rs[j].Product {
			return rs[i].Product < rs[j].Product
		}
		return CompareVersions(rs[i].Version, rs[j].Version) < 0
	})
	for i := range rs {
		bs := rs[i].Builds
		sort.Slice(bs, func(i, j int) bool { return bs[i].Filename < bs[j].Filename })
		ss := rs[i].Signatures
		sort.Slice(ss, func(i, j int) bool { return ss[i].Name < ss[j].Name })
	}
}

// checkReleaseMerge: a release both catalogs have must have the same
// SHA256SUMS and, for every platform both list, the same zip; next may
// add platforms.
func (c *Catalog) checkReleaseMerge(next *Catalog) error {
	have := map[string]*CLIRelease{}
	for i := range c.Releases {
		have[c.Releases[i].ReleaseKey()] = &c.Releases[i]
	}
	for _, nr := range next.Releases {
		old, ok := have[nr.ReleaseKey()]
		if !ok {
			continue
		}
		if old.Shasums != nr.Shasums {
			return fmt.Errorf("release %s: its SHA256SUMS (%s) differs from the one the store serves (%s)", nr, nr.Shasums.Short(), old.Shasums.Short())
		}
		for _, b := range nr.Builds {
			if prev, ok := old.Build(b.Filename); ok && prev.Digest != b.Digest {
				return fmt.Errorf("release %s %s: the bundle's zip %s differs from the store's %s", nr, b.Platform(), b.Digest.Short(), prev.Digest.Short())
			}
		}
	}
	return nil
}

// mergeReleases adds next's releases to c: a release both have gets the
// union of builds, next's record otherwise.
func (c *Catalog) mergeReleases(next *Catalog) (added []string) {
	idx := map[string]int{}
	for i, r := range c.Releases {
		idx[r.ReleaseKey()] = i
	}
	for _, nr := range next.Releases {
		i, ok := idx[nr.ReleaseKey()]
		if !ok {
			c.Releases = append(c.Releases, nr)
			idx[nr.ReleaseKey()] = len(c.Releases) - 1
			var plats []string
			for _, b := range nr.Builds {
				plats = append(plats, b.Platform())
			}
			added = append(added, fmt.Sprintf("release %s (%s)", nr, strings.Join(plats, ", ")))
			continue
		}
		old := c.Releases[i]
		merged := nr
		merged.Builds = append([]ReleaseBuild(nil), nr.Builds...)
		for _, b := range old.Builds {
			if _, ok := nr.Build(b.Filename); !ok {
				merged.Builds = append(merged.Builds, b)
			}
		}
		for _, b := range nr.Builds {
			if _, ok := old.Build(b.Filename); !ok {
				added = append(added, fmt.Sprintf("release %s %s", nr, b.Filename))
			}
		}
		c.Releases[i] = merged
	}
	return added
}

// releaseBlobs adds the blobs of c's releases to out, with their roles.
func (c *Catalog) releaseBlobs(out map[verify.Digest]string) {
	for _, r := range c.Releases {
		out[r.Shasums] = RoleReleaseShasums
		out[r.Key] = RoleReleaseKey
		for _, s := range r.Signatures {
			out[s.Digest] = RoleReleaseSignature
		}
		for _, b := range r.Builds {
			out[b.Digest] = RoleReleaseZip
		}
	}
}

// describeReleases is DescribeBlobs for c's releases.
func (c *Catalog) describeReleases(add func(d verify.Digest, format string, a ...any)) {
	for _, r := range c.Releases {
		add(r.Shasums, "SHA256SUMS of release %s", r)
		add(r.Key, "publisher key of release %s", r)
		for _, s := range r.Signatures {
			add(s.Digest, "SHA256SUMS signature %s of release %s", s.Name, r)
		}
		for _, b := range r.Builds {
			add(b.Digest, "zip of release %s %s (%s)", r, b.Platform(), b.Filename)
		}
	}
}
