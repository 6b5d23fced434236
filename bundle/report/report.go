package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Report is what 'airgap verify' shows the person who decides, at the
// transfer station, what may enter: Text for people, and as JSON the one
// document 'airgap verify --json' prints. Check fills what the bundle
// says; bundle/store's Review adds what the offline side will make of it
// (publisher-key pins, the difference to an inventory); Finish sets the
// verdict.
//
// Its JSON is a published format: keys are snake_case, lists always
// present, optional fields omitted, never null; new keys may be added and
// existing ones keep their meaning. Each key is described in
// docs/formats.md ("verify --json, field by field").
type Report struct {
	OK               bool                      `json:"ok"`
	Error            string                    `json:"error,omitempty"`
	Status           string                    `json:"status"`
	File             string                    `json:"file"`
	Bundle           string                    `json:"bundle,omitempty"`
	Format           int                       `json:"format,omitempty"`
	Tool             string                    `json:"tool,omitempty"`
	Signer           *verify.Signer            `json:"signer,omitempty"`
	SignedAt         *time.Time                `json:"signed_at,omitempty"`
	Compressed       bool                      `json:"compressed"`
	Kind             string                    `json:"kind,omitempty"`
	Delta            *bundle.Delta             `json:"delta,omitempty"`
	Parts            int                       `json:"parts,omitempty"`
	ProviderVersions int                       `json:"provider_versions"`
	Packages         int                       `json:"provider_packages"`
	ModuleVersions   int                       `json:"module_versions"`
	Blobs            int                       `json:"blobs"`
	Omitted          int                       `json:"blobs_omitted"`
	Bytes            int64                     `json:"bytes"`
	Attention        []Attention               `json:"attention"`
	Providers        []ProviderEntry           `json:"providers"`
	Modules          []ModuleEntry             `json:"modules"`
	Withdraw         []dist.Withdrawal         `json:"withdraw"`
	Reinstate        []dist.Withdrawal         `json:"reinstate"`
	PublisherKeys    []NamespaceReview         `json:"publisher_keys"`
	Declared         []bundle.PublisherKeyDecl `json:"declared_publisher_keys"`
	Gates            []dist.Gate               `json:"gates"`
	SBOM             verify.Digest             `json:"sbom,omitempty"`
	SBOMFile         string                    `json:"sbom_file,omitempty"` // set by the caller that wrote it
	Against          *Against                  `json:"against,omitempty"`
	Forecast         *Forecast                 `json:"forecast,omitempty"`
	Checks           *check.Result             `json:"checks,omitempty"`
	Chain            []ChainHop                `json:"chain"` // the chain of custody, as verify shows it

	manifest *bundle.Manifest
	seen     map[string]bool // attention kind + subject
}

// Verdicts (Report.Status).
const (
	StatusVerified       = "verified"
	StatusNeedsAttention = "needs_attention"
	StatusFailed         = "failed"
)

// Attention kinds: what makes a verified bundle need a person's look.
const (
	AttentionNewKey       = "new_publisher_key"     // a key new for its namespace that the import will pin
	AttentionKeyRefused   = "publisher_key_refused" // the import will refuse it (pins)
	AttentionSiteResigned = "site_resigned"         // no publisher signature: the site re-signed SHA256SUMS
	AttentionMirrorOnly   = "mirror_hashes_only"    // no publisher signature: only a network mirror's hashes
	AttentionKeyExpired   = "key_expired_since"     // signed while valid by a key that has expired since
	AttentionWithdrawn    = "withdrawn_in_store"    // carries what the store has withdrawn: the import will refuse
	AttentionConflict     = "conflicts_with_store"  // differs from what the store serves: the import will refuse
	AttentionGateWaived   = "gate_waived"           // failed a gate the export ran, let through by a waiver
)

// Attention is one thing a person must look at before letting the bundle in.
type Attention struct {
	Kind    string `json:"kind"`
	Subject string `json:"subject"` // the namespace, provider or module version it is about
	Message string `json:"message"`
}

// ProviderEntry is one provider version of the bundle.
type ProviderEntry struct {
	Address   string                `json:"address"`
	Version   string                `json:"version"`
	Protocols []string              `json:"protocols"`
	Trust     string                `json:"trust"`
	Mirror    string                `json:"mirror,omitempty"` // the network mirror, for trust "mirror_hashes_only"
	Platforms []PackageEntry        `json:"platforms"`
	Signature *check.SignatureFacts `json:"signature,omitempty"`
	KeyStatus string                `json:"key_status"`
	KeyNote   string                `json:"key_note,omitempty"`
	InStore   string                `json:"in_store,omitempty"`
	Gates     []GateEntry           `json:"gates"`
	// RequestedBy and Build: the evidence.
	RequestedBy *Requested           `json:"requested_by,omitempty"`
	Build       []check.BuildSummary `json:"build"`
	// Docs is the version's documentation record (format 3), or nil.
	Docs     *dist.ProviderDocs `json:"docs,omitempty"`
	CameWith verify.Digest      `json:"came_with,omitempty"` // the chain of custody, as verify shows it
	key      string             // dist.ProviderVersion.Key
}

// Key is the provider version's catalog key.
func (p *ProviderEntry) Key() string { return p.key }

// PackageEntry is one platform's package.
type PackageEntry struct {
	Platform  string `json:"platform"`
	Filename  string `json:"filename"`
	SHA256    string `json:"sha256"`
	SizeBytes int64  `json:"size_bytes"`
	H1        string `json:"h1"`
}

// ModuleEntry is one module version of the bundle.
type ModuleEntry struct {
	Address   string          `json:"address"`
	Version   string          `json:"version"`
	Source    string          `json:"source"`
	Commit    string          `json:"commit,omitempty"`
	Subdir    string          `json:"subdir,omitempty"`
	SHA256    string          `json:"sha256"`
	SizeBytes int64           `json:"size_bytes"`
	ZipSHA256 string          `json:"zip_sha256,omitempty"`
	Vendored  []VendoredEntry `json:"vendored"`
	InStore   string          `json:"in_store,omitempty"`
	Gates     []GateEntry     `json:"gates"`
	// RequestedBy: the evidence.
	RequestedBy *Requested `json:"requested_by,omitempty"`
	// Docs is the digest of the module's documentation (format 3), or "".
	Docs     verify.Digest `json:"docs,omitempty"`
	CameWith verify.Digest `json:"came_with,omitempty"` // the chain of custody, as verify shows it
	key      string
}

// Key is the module version's catalog key.
func (m *ModuleEntry) Key() string { return m.key }

// GateEntry is one gate's result on an entry (dist.GateResult); Platform
// names the provider package it ran on (gates over providers run on each
// platform's plugin).
type GateEntry struct {
	Platform string `json:"platform,omitempty"`
	dist.GateResult
}

// VendoredEntry is one module source export rewrote (dist.VendoredCall).
type VendoredEntry struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Module string `json:"module"`
	Source string `json:"source"`
	Commit string `json:"commit,omitempty"`
	SHA256 string `json:"sha256"`
	Path   string `json:"path"`
}

// NamespaceReview is one namespace's publisher keys: the offline side's
// history and the keys this bundle's providers are signed by.
type NamespaceReview struct {
	Namespace string        `json:"namespace"`
	History   []dist.KeyPin `json:"history"`
	InBundle  []BundleKey   `json:"in_bundle"`
}

// BundleKey is a key that signs providers of the bundle in one namespace.
type BundleKey struct {
	Fingerprint string   `json:"fingerprint"`
	KeyID       string   `json:"key_id"`
	Identity    string   `json:"identity,omitempty"`
	Trust       string   `json:"trust"`
	Status      string   `json:"status"`
	Providers   []string `json:"providers"`
}

// Against is the difference a bundle makes to the store an inventory
// describes ('airgap inventory --json', carried back).
type Against struct {
	Inventory        string      `json:"inventory"`
	StoreProviders   int         `json:"store_provider_versions"`
	StoreModules     int         `json:"store_module_versions"`
	Added            []DiffItem  `json:"added"`
	AlreadyPresent   []DiffItem  `json:"already_present"`
	Withdrawn        []DiffItem  `json:"withdrawn"`
	Reinstated       []DiffItem  `json:"reinstated"`
	Refused          []DiffItem  `json:"refused"`
	KeyChanges       []KeyChange `json:"key_changes"`
	KeysUnknownNotes []string    `json:"-"`
}

// DiffItem is one provider or module version in a difference.
type DiffItem struct {
	Kind      string   `json:"kind"`
	Address   string   `json:"address"`
	Version   string   `json:"version"`
	Platforms []string `json:"platforms,omitempty"`
	Note      string   `json:"note,omitempty"`
}

// KeyChange is a key new for its namespace.
type KeyChange struct {
	Namespace string        `json:"namespace"`
	Before    []dist.KeyPin `json:"before"`
	Key       BundleKey     `json:"key"`
}

// Manifest is the checked manifest (nil before Check got that far).
func (rep *Report) Manifest() *bundle.Manifest { return rep.manifest }

// AddAttention adds an attention item (once per kind and subject).
func (rep *Report) AddAttention(kind, subject, message string) {
	if rep.seen == nil {
		rep.seen = map[string]bool{}
	}
	if k := kind + "\x00" + subject; !rep.seen[k] {
		rep.seen[k] = true
		rep.Attention = append(rep.Attention, Attention{Kind: kind, Subject: subject, Message: message})
	}
}

// Check reads a whole bundle, checking the signature, every blob's digest
// and what the signed manifest says against itself and its blobs
// (check.All), and fills rep with what the bundle carries. It keeps
// nothing: what the h1: check must spool goes to a temporary file that is
// removed.
func Check(r io.Reader, kr openpgp.EntityList, rep *Report) error {
	return CheckFor(r, kr, nil, rep)
}

// CheckFor is Check for a review against a store whose import policy has
// a chain keyring (chainKR, nil for none): each hop's signature is also
// checked with that keyring's copy of its key (check.Options.ChainKeyring),
// so that the forecast decides the chain policy as the import will.
func CheckFor(r io.Reader, kr, chainKR openpgp.EntityList, rep *Report) error {
	br, err := bundle.NewReader(r, kr)
	if err != nil {
		return err
	}
	defer br.Close()
	m := br.Manifest()
	signer, at := br.Signer(), br.SignedAt().UTC()
	rep.Bundle, rep.Signer, rep.SignedAt, rep.Compressed, rep.Tool, rep.Format, rep.Delta = string(br.ID()), &signer, &at, br.Compressed(), m.Tool, m.Format, m.Delta
	rep.manifest = m
	rep.Kind = "full"
	if m.Delta != nil {
		rep.Kind = "delta"
	}
	rep.ProviderVersions, rep.ModuleVersions = len(m.Catalog.Providers), len(m.Catalog.Modules)
	rep.Omitted = len(m.Blobs) - len(m.Carried())
	rep.Withdraw, rep.Reinstate, rep.Declared = m.Withdraw, m.Reinstate, m.PublisherKeys
	rep.Gates, rep.SBOM = m.Gates, m.SBOM
	rep.Checks, rep.Blobs, rep.Bytes, err = check.AllWith(br, check.Options{ChainKeyring: chainKR})
	if err != nil {
		return err
	}
	rep.chain(m)
	rep.entries(m)
	return nil
}

// entries fills the provider and module sections, and the attention items
// the bundle alone tells: site re-signatures, keys expired since, gates
// failed but waived.
func (rep *Report) entries(m *bundle.Manifest) {
	for _, p := range m.Catalog.Providers {
		e := ProviderEntry{Address: p.Addr(), Version: p.Version, Protocols: append([]string{}, p.Protocols...), Trust: check.Trust(p),
			Mirror: p.Mirror, KeyStatus: "unknown", key: p.Key(), Signature: rep.Checks.Facts(p.Key()),
			RequestedBy: requested(m, dist.KindProvider, p.Key()), Build: rep.Checks.Builds(p), Docs: p.Docs, CameWith: rep.Checks.CameWith(dist.KindProvider, p.Key())}
		for _, pk := range p.Packages {
			e.Platforms = append(e.Platforms, PackageEntry{Platform: pk.Platform(), Filename: pk.Filename, SHA256: pk.Digest.Hex(), SizeBytes: pk.Size, H1: pk.H1})
			for _, r := range pk.Gates {
				e.Gates = append(e.Gates, GateEntry{Platform: pk.Platform(), GateResult: r})
			}
			rep.Packages++
		}
		rep.Providers = append(rep.Providers, e)
		rep.waived("provider "+p.String(), p.Addr()+"@"+p.Version, e.Gates)
		if e.Trust == dist.TrustMirror {
			rep.AddAttention(AttentionMirrorOnly, p.String(), fmt.Sprintf("provider %s carries only the network mirror %s's hashes: no publisher signature vouches for it (exported with --trust-mirror-hashes; 'airgap import --require-publisher-signatures' refuses it)", p, p.Mirror))
		}
		if e.Trust == dist.TrustSite {
			rep.AddAttention(AttentionSiteResigned, p.String(), fmt.Sprintf("provider %s is not signed by its publisher: %s published no key, so export checked its packages against the registry's SHA256SUMS (over TLS only) and re-signed it with the site key", p, p.Host))
		}
		if f := e.Signature; f != nil && f.KeyExpiredSince {
			rep.AddAttention(AttentionKeyExpired, f.Namespace+" "+f.Signer.Fingerprint, fmt.Sprintf("key %s (%s) expired on %s; it signed %s on %s, while it was valid (what counts; check that the publisher renewed or replaced it)",
				verify.GroupFingerprint(f.Signer.Fingerprint), f.Signer.Identity, f.KeyExpires.Format("2006-01-02"), p, f.Created.Format("2006-01-02")))
		}
	}
	for _, mv := range m.Catalog.Modules {
		e := ModuleEntry{Address: mv.Addr(), Version: mv.Version, Source: mv.Source, Commit: mv.Commit, Subdir: mv.Subdir, Docs: mv.Docs,
			SHA256: mv.Archive.Hex(), SizeBytes: mv.Size, Vendored: []VendoredEntry{}, key: mv.Key(),
			RequestedBy: requested(m, dist.KindModule, mv.Key()), CameWith: rep.Checks.CameWith(dist.KindModule, mv.Key())}
		if mv.Zip != "" {
			e.ZipSHA256 = mv.Zip.Hex()
		}
		for _, v := range mv.Vendored {
			e.Vendored = append(e.Vendored, VendoredEntry{File: v.File, Line: v.Line, Module: v.Module, Source: v.Source, Commit: v.Commit, SHA256: v.Digest.Hex(), Path: v.Path})
		}
		for _, r := range mv.Gates {
			e.Gates = append(e.Gates, GateEntry{GateResult: r})
		}
		rep.Modules = append(rep.Modules, e)
		rep.waived("module "+mv.String(), mv.Addr()+"@"+mv.Version, e.Gates)
	}
}

// waived adds one attention item for an entry (a provider or module
// version) with waived gate results: it failed them, and the export
// manifest let it through; a person must read why, and the reports: the
// item ends with the 'airgap show' command that prints them (at is the
// entry's ADDRESS@VERSION).
func (rep *Report) waived(entry, at string, gs []GateEntry) {
	var gates []string
	where := map[string][]string{} // gate -> "platform (exit, findings)"
	reason := map[string]string{}
	for _, g := range gs {
		if g.Status != dist.GateWaived {
			continue
		}
		if _, ok := where[g.Gate]; !ok {
			gates = append(gates, g.Gate)
			reason[g.Gate] = g.Waiver
		}
		on := fmt.Sprintf("exit %d, %s", g.ExitCode, g.Findings)
		if g.Platform != "" {
			on = g.Platform + ": " + on
		}
		where[g.Gate] = append(where[g.Gate], on)
	}
	if len(gates) == 0 {
		return
	}
	parts := make([]string, len(gates))
	for i, g := range gates {
		parts[i] = fmt.Sprintf("gate %s (%s), waived: %q", g, strings.Join(where[g], "; "), reason[g])
	}
	file, show := rep.File, at
	if file == "" {
		file = "BUNDLE"
	}
	if len(gates) == 1 {
		show += " " + gates[0]
	}
	rep.AddAttention(AttentionGateWaived, strings.TrimPrefix(strings.TrimPrefix(entry, "provider "), "module "),
		fmt.Sprintf("%s failed %s; the export manifest let it through: read the reason and the report before you let it in: airgap show --keyring KEYRING %s report %s",
			entry, strings.Join(parts, ", "), file, show))
}

// Finish sets the verdict from err (the verification's error, or nil) and
// the attention items, and makes every list non-nil for JSON.
func (rep *Report) Finish(err error) {
	rep.OK = err == nil
	switch {
	case err != nil:
		rep.Status, rep.Error = StatusFailed, err.Error()
	case len(rep.Attention) > 0:
		rep.Status = StatusNeedsAttention
	default:
		rep.Status = StatusVerified
	}
	nonNil(&rep.Attention)
	nonNil(&rep.Providers)
	nonNil(&rep.Modules)
	nonNil(&rep.Withdraw)
	nonNil(&rep.Reinstate)
	nonNil(&rep.PublisherKeys)
	nonNil(&rep.Declared)
	nonNil(&rep.Gates)
	nonNil(&rep.Chain)
	for i := range rep.Gates {
		nonNil(&rep.Gates[i].Command)
	}
	for i := range rep.Providers {
		nonNil(&rep.Providers[i].Platforms)
		nonNil(&rep.Providers[i].Protocols)
		nonNil(&rep.Providers[i].Gates)
		nonNil(&rep.Providers[i].Build)
	}
	for i := range rep.Modules {
		nonNil(&rep.Modules[i].Vendored)
		nonNil(&rep.Modules[i].Gates)
	}
	for i := range rep.PublisherKeys {
		nonNil(&rep.PublisherKeys[i].History)
		nonNil(&rep.PublisherKeys[i].InBundle)
		for j := range rep.PublisherKeys[i].InBundle {
			nonNil(&rep.PublisherKeys[i].InBundle[j].Providers)
		}
	}
	if rep.Checks != nil {
		nonNil(&rep.Checks.Deferred)
	}
	if f := rep.Forecast; f != nil {
		nonNil(&f.Policy)
		nonNil(&f.Refused)
		nonNil(&f.TrustChanges)
		nonNil(&f.Undecided)
		nonNil(&f.Pins)
		if a := f.Approvals; a != nil {
			nonNil(&a.Valid)
			nonNil(&a.Invalid)
			for i := range a.Valid {
				nonNil(&a.Valid[i].PublisherKeys)
			}
		}
	}
	if a := rep.Against; a != nil {
		for _, l := range []*[]DiffItem{&a.Added, &a.AlreadyPresent, &a.Withdrawn, &a.Reinstated, &a.Refused} {
			nonNil(l)
		}
		nonNil(&a.KeyChanges)
		for i := range a.KeyChanges {
			nonNil(&a.KeyChanges[i].Before)
			nonNil(&a.KeyChanges[i].Key.Providers)
		}
	}
	// Attention first by kind's weight, then as found.
	sort.SliceStable(rep.Attention, func(i, j int) bool {
		return attentionRank(rep.Attention[i].Kind) < attentionRank(rep.Attention[j].Kind)
	})
}

func nonNil[T any](s *[]T) {
	if *s == nil {
		*s = []T{}
	}
}

func attentionRank(kind string) int {
	for i, k := range []string{AttentionKeyRefused, AttentionWithdrawn, AttentionConflict, AttentionCustody, AttentionNewKey, AttentionGateWaived, AttentionSiteResigned, AttentionKeyExpired} {
		if k == kind {
			return i
		}
	}
	return 100
}
