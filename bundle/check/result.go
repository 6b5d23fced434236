package check

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Result says what a Checker checked (the "checks" object of
// 'airgap verify --json').
type Result struct {
	Signatures int `json:"sha256sums_signatures"`  // SHA256SUMS signatures checked against the carried keys
	Packages   int `json:"packages_in_sha256sums"` // packages found with their sha256 in a signed SHA256SUMS
	H1         int `json:"h1_hashes"`              // zips whose h1 was computed and compared
	ModuleZips int `json:"module_zips"`            // module zips rebuilt from their archives and compared
	// ModuleTrees: module archives whose names were checked (package
	// portable: every one must be the same file on every file system).
	ModuleTrees int `json:"module_trees"`
	// BuildInfo: plugins whose Go build information was read again from
	// their zips and compared, one per package of the catalog (a zip two
	// entries share counts twice, as the review's "build:" line does).
	BuildInfo int `json:"build_info"`
	// BuildInfoNone: of those, the documents that say the plugin has no
	// Go build information (and why).
	BuildInfoNone int `json:"build_info_none"`
	// Docs: documentation blobs read whole and held to their form
	// (docs.Check for a provider's tar, with its page and byte counts
	// compared; docs.ParseModuleDocs for a module's).
	Docs    int `json:"docs"`
	Reports int `json:"gate_reports"` // gate reports whose SARIF findings were counted again and compared
	// SBOM is "checked" (built again from the manifest and the checked
	// build information, and equal to the signed one), "deferred" (some
	// build information is in blobs a delta omits) or "none" (the bundle
	// has no SBOM).
	SBOM string `json:"sbom"`
	// sbom writes the SBOM as checked (the signed bytes) again, for
	// WriteSBOM ('verify --sbom').
	sbom func(io.Writer) error
	// Deferred lists what could not be checked without the store (a delta's
	// omitted blobs); import checks it.
	Deferred []string `json:"deferred"`
	// MirrorHashesOnly counts the packages among Packages whose SHA256SUMS
	// the exporting site wrote from a network mirror's hashes (see
	// dist.ProviderVersion.MirrorHashesOnly): no publisher vouches for them.
	MirrorHashesOnly int `json:"mirror_hashes_only"`
	// Signed holds, for each provider version whose signature was checked
	// (catalog order), what its SHA256SUMS signature says: the facts
	// 'airgap verify' shows and the import's publisher-key pins decide on.
	Signed []SignatureFacts `json:"-"`
	byKey  map[string]int   // Signed by provider key, built by Facts
	// Releases holds, for each Terraform or OpenTofu CLI release whose
	// signatures were checked (catalog order), who signed it.
	Releases []ReleaseFacts `json:"releases,omitempty"`
	// Hops counts the chain hops whose signatures were checked again
	// (the chain check); Chain is every hop, oldest first, with what was found.
	Hops  int        `json:"chain_hops"`
	Chain []HopCheck `json:"-"`
	// Untied lists the records of a bundle exported from a store that no
	// checked hop carries: possible only when the chain has hops recorded
	// without their manifests (an import's chain policy refuses it).
	Untied []string `json:"-"`
	came   map[string]verify.Digest
	// builds is what each package's plugin was built from (BuildSummary:
	// a few short strings each), by package digest, for the report.
	builds map[verify.Digest]*BuildSummary
}

// SignatureFacts is what one provider version's checked SHA256SUMS
// signature says.
type SignatureFacts struct {
	Provider  string        `json:"-"` // dist.ProviderVersion.Key
	Namespace string        `json:"-"` // dist.NamespaceKey
	Trust     string        `json:"-"` // dist.TrustPublisher or dist.TrustSite
	Signer    verify.Signer `json:"signer"`
	Created   time.Time     `json:"created"`
	// KeyExpires is when the signing key expires by its newest
	// self-signature (nil: never); KeyExpiredSince says that it has by
	// this machine's clock (the signature was made while it was valid,
	// which is what counts; see verify.CheckSignature).
	KeyExpires      *time.Time `json:"key_expires,omitempty"`
	KeyExpiredSince bool       `json:"key_expired_since"`
}

// Facts returns the signature facts of the provider version with Key key,
// or nil (not checked: a delta's omitted SHA256SUMS).
func (r *Result) Facts(key string) *SignatureFacts {
	if r.byKey == nil || len(r.byKey) != len(r.Signed) {
		r.byKey = make(map[string]int, len(r.Signed))
		for i := range r.Signed {
			r.byKey[r.Signed[i].Provider] = i
		}
	}
	if i, ok := r.byKey[key]; ok {
		return &r.Signed[i]
	}
	return nil
}

// Trust is the trust tier of p (dist.TrustPublisher, dist.TrustSite or
// dist.TrustMirror).
func Trust(p dist.ProviderVersion) string { return p.Trust() }

// Summary is the report as indented lines for a terminal ("" for nil).
func (r *Result) Summary(indent string) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%sconsistent: %d SHA256SUMS signatures verified against the carried keys, %d packages found in them, %d h1 hashes recomputed, %d module archives' names checked, %d module zips rebuilt\n",
		indent, r.Signatures, r.Packages, r.H1, r.ModuleTrees, r.ModuleZips)
	if r.MirrorHashesOnly > 0 {
		fmt.Fprintf(&b, "%sof those packages, %d carry a network mirror's hashes only (no publisher signature; 'import --require-publisher-signatures' refuses them)\n", indent, r.MirrorHashesOnly)
	}
	// Said as the review's "build:" line says it (plugins that carry Go
	// build information, plugins that do not), with the same numbers.
	switch {
	case r.BuildInfo > 0 && r.BuildInfoNone == r.BuildInfo:
		fmt.Fprintf(&b, "%s            %d plugins read again: none of them has Go build information (see Build information), %d gate reports' findings counted again\n", indent, r.BuildInfo, r.Reports)
	case r.BuildInfo > 0:
		fmt.Fprintf(&b, "%s            %d plugins read again: %d carry Go build information, %d do not (see Build information), %d gate reports' findings counted again\n", indent, r.BuildInfo, r.BuildInfo-r.BuildInfoNone, r.BuildInfoNone, r.Reports)
	case r.Reports > 0:
		fmt.Fprintf(&b, "%s            %d gate reports' findings counted again\n", indent, r.Reports)
	}
	for _, rf := range r.Releases {
		pin := "the key airgap pins for its publisher"
		if rf.KeyPin == dist.KeyPinManifest {
			pin = "the key the export manifest's publisher_key named"
		}
		fmt.Fprintf(&b, "%srelease:    %s: SHA256SUMS signed by %s, %s; %d archives found in it\n", indent, dist.Printable(rf.Release), dist.Printable(rf.Signer.String()), pin, rf.Builds)
	}
	if len(r.Deferred) > 0 {
		fmt.Fprintf(&b, "%sleft for import (their blobs are not in this delta): %d checks\n", indent, len(r.Deferred))
	}
	return b.String()
}
