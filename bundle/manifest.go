package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/verify"
)

// FormatVersion is the bundle format this package writes. It reads every
// format from minFormatVersion up to it: a newer airgap reads every bundle an
// older one wrote (testdata/formats holds a fixture of each), and an older
// airgap refuses a newer format with ErrTooNew ("upgrade airgap") rather than
// ignore what it does not know.
//
// Format 1: the manifest, its signature and the blobs, as docs/formats.md describes them.
// Format 2: format 1 plus optional manifest fields that format 1 could not
// carry (each documented where it is declared); a format-1 manifest must not
// have them (Validate).
// Format 3: format 2 plus the fields format3Field lists (why each entry is
// in the bundle; the documentation of providers and modules; see docs/formats.md);
// a format-1 or -2 manifest must not have them.
const FormatVersion = 3

// minFormatVersion is the oldest bundle format this package reads.
const minFormatVersion = 1

// Limits on what the reader accepts before the signature has been checked.
const (
	MaxManifestSize  = 64 << 20
	MaxSignatureSize = 64 << 10
)

// Entry names.
const (
	ManifestName  = "manifest.json"
	SignatureName = "manifest.json.sig"
	blobPrefix    = "blobs/sha256/"
)

// Manifest is the signed table of contents of a bundle.
type Manifest struct {
	Format  int          `json:"format"`
	Tool    string       `json:"tool"`
	Created *time.Time   `json:"created,omitempty"` // only from SOURCE_DATE_EPOCH
	Delta   *Delta       `json:"delta,omitempty"`
	Blobs   []Blob       `json:"blobs"`
	Catalog dist.Catalog `json:"catalog"`
	// Withdraw takes versions out of the importing store's catalog;
	// Reinstate lifts earlier withdrawals so that this bundle (or a later
	// one) may carry those versions again. Both are optional: bundles
	// without them are unchanged, and an airgap that predates them refuses
	// a bundle that has them (unknown field) rather than ignore a
	// withdrawal.
	Withdraw  []dist.Withdrawal `json:"withdraw,omitempty"`
	Reinstate []dist.Withdrawal `json:"reinstate,omitempty"`
	// PublisherKeys declares publisher keys the exporting side approved as
	// new for a namespace (format 2; see PublisherKeyDecl). Sorted.
	PublisherKeys []PublisherKeyDecl `json:"publisher_keys,omitempty"`
	// Gates lists the gates the export ran (format 2): each entry of a
	// gate's kind carries its result (dist.GateResult, on each package or
	// module version), and check.Manifest holds the two together.
	Gates []dist.Gate `json:"gates,omitempty"`
	// SBOM is the bundle's CycloneDX SBOM, a blob of role dist.RoleSBOM
	// (format 2). It is a function of this manifest and the blobs'
	// bytes (check.BuildSBOM): the consistency check computes it again and
	// compares the digest.
	SBOM verify.Digest `json:"sbom,omitempty"`
	// SBOMGenerator is the version of airgap's SBOM document (sbom.Generator)
	// the SBOM was written as, so that a newer airgap builds the same bytes
	// to compare; 0 (absent) in bundles written before it was recorded,
	// which are generator 1.
	SBOMGenerator int `json:"sbom_generator,omitempty"`
	// RequestedBy says why each entry is in the bundle (format 3;
	// dist.Reason): the manifest block or project file that asked for it,
	// and the chain of module calls that brought it. At most one per
	// catalog entry, sorted (dist.SortReasons); Validate holds them to the
	// catalog (dist.ValidateReasons). Optional: a bundle without them says
	// nothing about why.
	RequestedBy []dist.Reason `json:"requested_by,omitempty"`
	// Chain is the bundle's chain of custody (format 3; Hop): set
	// only on a bundle exported from an offline store ('airgap export
	// --from-store'), it lists every bundle whose content this one carries
	// onwards, as the stores on the way imported them. Sorted by bundle.
	Chain []Hop `json:"chain,omitempty"`
}

// PublisherKeyDecl says that whoever exported the bundle approved
// Fingerprint as a new publisher signing key for the providers of
// Namespace ('airgap export --accept-new-publisher-key FINGERPRINT'). The
// manifest's signature covers it. An importing store that pins other keys
// for the namespace accepts this key, for this bundle's providers, and
// pins it from then on (bundle/store's publisher-key policy).
//
// A declaration is only as good as the providers it comes with: the
// check.Checker refuses a bundle with a declaration that no provider of the
// bundle needs (one of that namespace whose SHA256SUMS that key signed), so
// a bundle cannot pre-approve a key for providers it does not carry, or
// for another namespace.
type PublisherKeyDecl struct {
	Namespace   string `json:"namespace"`   // dist.NamespaceKey, e.g. "registry.terraform.io/hashicorp"
	Fingerprint string `json:"fingerprint"` // as verify.Fingerprint: upper-case hex
}

// MaxSBOMSize bounds a bundle's SBOM blob; MaxReportSize a gate report.
// Both are read whole by the consistency check (the SBOM is rebuilt in
// memory to compare it; a report is streamed through dist.CountSARIF).
const (
	MaxSBOMSize   = 128 << 20
	MaxReportSize = 64 << 20
)

// Blob is one content-addressed file.
type Blob struct {
	Digest verify.Digest `json:"digest"`
	Size   int64         `json:"size"`
	Role   string        `json:"role"`
	// Omitted is true in a delta bundle for a blob that the base already has
	// and this bundle does not carry.
	Omitted bool `json:"omitted,omitempty"`
}

// Delta describes the base of a delta bundle.
type Delta struct {
	// Base names what the delta was computed against: the manifest digest of
	// a previous bundle, or "inventory" for an offline store's inventory.
	Base string `json:"base"`
	// BaseBundles lists manifest digests of bundles known to provide the
	// omitted blobs, for error messages on the offline side.
	BaseBundles []string `json:"base_bundles,omitempty"`
}

// EntryName is the tar entry name of a blob.
func EntryName(d verify.Digest) string { return blobPrefix + d.Hex() }

// Carried returns the blobs the bundle actually contains.
func (m *Manifest) Carried() []Blob {
	out := make([]Blob, 0, len(m.Blobs))
	for _, b := range m.Blobs {
		if !b.Omitted {
			out = append(out, b)
		}
	}
	return out
}

// Totals returns the number and bytes of carried blobs.
func (m *Manifest) Totals() (n int, bytes int64) {
	for _, b := range m.Carried() {
		n++
		bytes += b.Size
	}
	return
}

// Normalize sorts the blobs and catalog into canonical order.
func (m *Manifest) Normalize() {
	sort.Slice(m.Blobs, func(i, j int) bool { return m.Blobs[i].Digest < m.Blobs[j].Digest })
	m.Catalog.Sort()
	dist.SortWithdrawals(m.Withdraw)
	dist.SortWithdrawals(m.Reinstate)
	SortPublisherKeys(m.PublisherKeys)
	sort.Slice(m.Gates, func(i, j int) bool { return m.Gates[i].Name < m.Gates[j].Name })
	dist.SortReasons(m.RequestedBy)
	sort.Slice(m.Chain, func(i, j int) bool { return m.Chain[i].Bundle < m.Chain[j].Bundle })
}

// Marshal returns the canonical JSON form of m.
func (m *Manifest) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// manifestJSON bounds a manifest: MaxManifestSize bytes, values nested at
// most 32 deep (it nests 8: itself, catalog, providers, a provider,
// packages, a package, gates, a result's findings), no unknown keys.
var manifestJSON = dist.JSONLimit{MaxBytes: MaxManifestSize, MaxDepth: 32, Strict: true}

// ParseManifest decodes and validates a manifest (within manifestJSON).
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("%w: %d bytes is over the %d-byte limit", ErrManifest, len(data), MaxManifestSize)
	}
	if err := manifestJSON.Check(data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManifest, err)
	}
	var probe struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManifest, err)
	}
	if probe.Format > FormatVersion {
		return nil, fmt.Errorf("%w (format %d, this airgap reads format %d)\nhint: upgrade airgap on this side", ErrTooNew, probe.Format, FormatVersion)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManifest, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the manifest", ErrManifest)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks the manifest's internal consistency.
func (m *Manifest) Validate() error {
	if m.Format < minFormatVersion || m.Format > FormatVersion {
		return fmt.Errorf("%w: format %d, want %d to %d", ErrManifest, m.Format, minFormatVersion, FormatVersion)
	}
	if f := format2Field(m); f != "" && m.Format < 2 {
		return fmt.Errorf("%w: a format-%d manifest carries %s, which only format 2 has", ErrManifest, m.Format, f)
	}
	if f := format3Field(m); f != "" && m.Format < 3 {
		return fmt.Errorf("%w: a format-%d manifest carries %s, which only format 3 has", ErrManifest, m.Format, f)
	}
	roles := make(map[verify.Digest]string, len(m.Blobs))
	for i, b := range m.Blobs {
		if _, err := verify.ParseDigest(string(b.Digest)); err != nil {
			return fmt.Errorf("%w: blob %d: %v", ErrManifest, i, err)
		}
		if b.Size < 0 {
			return fmt.Errorf("%w: blob %s has negative size", ErrManifest, b.Digest.Short())
		}
		if i > 0 && m.Blobs[i-1].Digest >= b.Digest {
			return fmt.Errorf("%w: blobs are not sorted by digest or listed twice (%s)", ErrManifest, b.Digest.Short())
		}
		switch b.Role {
		case dist.RoleProviderPackage, dist.RoleShasums, dist.RoleShasumsSig, dist.RoleModuleArchive, dist.RoleModuleZip,
			dist.RoleGoBuildInfo, dist.RoleGateReport, dist.RoleSBOM, // these three: format 2 (format2Field)
			dist.RoleProviderDocs, dist.RoleModuleDocs, dist.RoleBundleManifest, dist.RoleBundleSignature, dist.RoleBundleKey, dist.RoleApproval, // format 3 (format3Field)
			dist.RoleReleaseZip, dist.RoleReleaseShasums, dist.RoleReleaseSignature, dist.RoleReleaseKey: // format 3: CLI releases
		default:
			return fmt.Errorf("%w: blob %s has unknown role %q", ErrManifest, b.Digest.Short(), b.Role)
		}
		if b.Omitted && m.Delta == nil {
			return fmt.Errorf("%w: blob %s is omitted but the bundle is not a delta", ErrManifest, b.Digest.Short())
		}
		roles[b.Digest] = b.Role
	}
	if err := m.Catalog.Validate(roles); err != nil {
		return fmt.Errorf("%w: %v", ErrManifest, err)
	}
	if err := dist.ValidateWithdrawals(&m.Catalog, m.Withdraw, m.Reinstate); err != nil {
		return fmt.Errorf("%w: %v", ErrManifest, err)
	}
	if err := m.validatePublisherKeys(); err != nil {
		return fmt.Errorf("%w: %v", ErrManifest, err)
	}
	if err := m.validateGatesAndSBOM(roles); err != nil {
		return fmt.Errorf("%w: %v", ErrManifest, err)
	}
	if err := dist.ValidateReasons(&m.Catalog, m.RequestedBy); err != nil {
		return fmt.Errorf("%w: %v", ErrManifest, err)
	}
	if err := m.validateChain(roles); err != nil {
		return fmt.Errorf("%w: %v", ErrManifest, err)
	}
	used := m.Catalog.Blobs()
	if m.SBOM != "" {
		used[m.SBOM] = dist.RoleSBOM
	}
	for d, role := range chainBlobs(m.Chain) {
		used[d] = role
	}
	for d := range roles {
		if _, ok := used[d]; !ok {
			return fmt.Errorf("%w: blob %s is listed but not used by the catalog", ErrManifest, d.Short())
		}
	}
	return nil
}

// format2Field names the first field of m that format 1 does not have, or
// is "": the one list of what format 2 added (Validate refuses any of it
// in a format-1 manifest). Manifest: publisher_keys, gates, sbom; blobs
// of roles go-build-info, gate-report and sbom; providers:
// mirror_hashes_only, mirror; packages: mirror_hashes, build_info, gates;
// modules: gates.
func format2Field(m *Manifest) string {
	switch {
	case len(m.PublisherKeys) > 0:
		return "publisher_keys"
	case len(m.Gates) > 0:
		return "gates"
	case m.SBOM != "" || m.SBOMGenerator != 0:
		return "sbom"
	}
	for _, b := range m.Blobs {
		switch b.Role {
		case dist.RoleGoBuildInfo, dist.RoleGateReport, dist.RoleSBOM:
			return "a blob of role " + b.Role
		}
	}
	for _, p := range m.Catalog.Providers {
		if p.MirrorHashesOnly || p.Mirror != "" {
			return "mirror_hashes_only (provider " + p.String() + ")"
		}
		for _, pk := range p.Packages {
			switch {
			case len(pk.MirrorHashes) > 0:
				return "mirror_hashes (provider " + p.String() + ")"
			case pk.BuildInfo != "":
				return "build_info (provider " + p.String() + ")"
			case len(pk.Gates) > 0:
				return "gates (provider " + p.String() + ")"
			}
		}
	}
	for _, mv := range m.Catalog.Modules {
		if len(mv.Gates) > 0 {
			return "gates (module " + mv.String() + ")"
		}
	}
	return ""
}

// format3Field names the first field of m that format 2 does not have, or
// is "": the one list of what format 3 added (Validate refuses any of it
// in a format-1 or -2 manifest). Manifest: requested_by, chain; providers:
// docs; modules: docs; blobs of roles provider-docs, module-docs,
// bundle-manifest, bundle-signature, bundle-key and approval.
func format3Field(m *Manifest) string {
	if len(m.RequestedBy) > 0 {
		return "requested_by"
	}
	if len(m.Chain) > 0 {
		return "chain"
	}
	if len(m.Catalog.Releases) > 0 {
		return "releases"
	}
	for _, b := range m.Blobs {
		switch b.Role {
		case dist.RoleProviderDocs, dist.RoleModuleDocs, dist.RoleBundleManifest, dist.RoleBundleSignature, dist.RoleBundleKey, dist.RoleApproval:
			return "a blob of role " + b.Role
		}
	}
	for _, p := range m.Catalog.Providers {
		if p.Docs != nil {
			return "docs (provider " + p.String() + ")"
		}
	}
	for _, mv := range m.Catalog.Modules {
		if mv.Docs != "" {
			return "docs (module " + mv.String() + ")"
		}
	}
	return ""
}

// validatePublisherKeys checks the form of the declarations (format 2:
// format2Field): each a namespace in canonical form and a fingerprint,
// sorted, none twice, at most one per provider version (each must be
// needed by one; check.Checker checks which).
func (m *Manifest) validatePublisherKeys() error {
	if len(m.PublisherKeys) == 0 {
		return nil
	}
	if len(m.PublisherKeys) > len(m.Catalog.Providers) {
		return fmt.Errorf("%d publisher key declarations for %d provider versions", len(m.PublisherKeys), len(m.Catalog.Providers))
	}
	for i, d := range m.PublisherKeys {
		host, ns, ok := strings.Cut(d.Namespace, "/")
		if !ok || !dist.ValidHost(host) || !dist.ValidProviderName(ns) || dist.NamespaceKey(host, ns) != d.Namespace {
			return fmt.Errorf("publisher key declaration %d: %q is not a provider namespace HOST/NAMESPACE in canonical form", i, dist.Printable(d.Namespace))
		}
		if fp, err := verify.ParseFingerprint(d.Fingerprint); err != nil || fp != d.Fingerprint {
			return fmt.Errorf("publisher key declaration for %s: %q is not a fingerprint in canonical form", d.Namespace, dist.Printable(d.Fingerprint))
		}
		if i > 0 && !declLess(m.PublisherKeys[i-1], d) {
			return fmt.Errorf("publisher key declarations are not sorted, or one is listed twice (%s %s)", d.Namespace, d.Fingerprint)
		}
	}
	return nil
}

// validateGatesAndSBOM checks the gate list (well-formed, each name once)
// and that the SBOM is a blob of its role.
func (m *Manifest) validateGatesAndSBOM(roles map[verify.Digest]string) error {
	if len(m.Gates) > dist.MaxGates {
		return fmt.Errorf("%d gates, over the limit of %d", len(m.Gates), dist.MaxGates)
	}
	seen := map[string]bool{}
	for _, g := range m.Gates {
		if err := g.Validate(); err != nil {
			return err
		}
		if seen[g.Name] {
			return fmt.Errorf("gate %s is listed twice", g.Name)
		}
		seen[g.Name] = true
	}
	if m.SBOMGenerator != 0 && m.SBOM == "" {
		return errors.New("sbom_generator is set, but the bundle has no SBOM")
	}
	if m.SBOMGenerator < 0 || m.SBOMGenerator > sbom.Generator {
		return fmt.Errorf("the SBOM was written by a newer airgap (SBOM generator %d; this airgap knows up to %d)\nhint: check and import this bundle with an airgap at least as new as the one that wrote it", m.SBOMGenerator, sbom.Generator)
	}
	if m.SBOM != "" {
		if _, err := verify.ParseDigest(string(m.SBOM)); err != nil {
			return fmt.Errorf("sbom: %v", err)
		}
		if roles[m.SBOM] != dist.RoleSBOM {
			return fmt.Errorf("sbom: blob %s is not listed with role %q", m.SBOM.Short(), dist.RoleSBOM)
		}
	}
	return nil
}

func declLess(a, b PublisherKeyDecl) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Fingerprint < b.Fingerprint
}

// SortPublisherKeys puts declarations in their canonical order.
func SortPublisherKeys(ds []PublisherKeyDecl) {
	sort.Slice(ds, func(i, j int) bool { return declLess(ds[i], ds[j]) })
}

// Describe says what a blob is for, e.g. "provider registry.terraform.io/hashicorp/aws 5.60.0 linux_amd64".
func (m *Manifest) Describe(d verify.Digest) string {
	for _, p := range m.Catalog.Providers {
		if p.Shasums == d {
			return "SHA256SUMS of provider " + p.String()
		}
		if p.ShasumsSig == d {
			return "SHA256SUMS signature of provider " + p.String()
		}
		for _, pk := range p.Packages {
			if pk.Digest == d {
				return "provider " + p.String() + " " + pk.Platform()
			}
		}
	}
	for _, mv := range m.Catalog.Modules {
		if mv.Archive == d {
			return "module " + mv.String()
		}
	}
	if d == m.SBOM {
		return "the bundle's SBOM"
	}
	if what := describeChainBlob(m.Chain, d); what != "" {
		return what
	}
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			if pk.BuildInfo == d {
				return "Go build information of provider " + p.String() + " " + pk.Platform()
			}
			for _, r := range pk.Gates {
				if r.Report == d {
					return "gate " + r.Gate + " report on provider " + p.String() + " " + pk.Platform()
				}
			}
		}
	}
	for _, mv := range m.Catalog.Modules {
		for _, r := range mv.Gates {
			if r.Report == d {
				return "gate " + r.Gate + " report on module " + mv.String()
			}
		}
		if mv.Docs == d {
			return "docs of module " + mv.String()
		}
	}
	for _, p := range m.Catalog.Providers {
		if p.Docs != nil && p.Docs.Archive == d {
			return "docs of provider " + p.String()
		}
	}
	return "unreferenced blob"
}
