package dist

import (
	"time"

	"github.com/airgap/airgap/verify"
)

// Trust tiers: how a provider version's packages are vouched for. A
// bundle's providers are one of these (check.Trust decides which); the
// list may grow (a tier whose packages are checked only against a
// mirror's hashes, say), so readers treat an unknown tier as the weakest.
const (
	// TrustPublisher: the publisher's key signed SHA256SUMS, and the
	// package hashes are in it.
	TrustPublisher = "publisher_signed"
	// TrustSite: the origin registry published no key; the exporting site
	// checked the packages against the registry's SHA256SUMS over TLS and
	// re-signed it with the site key (registry.opentofu.org only).
	TrustSite = "site_resigned"
	// TrustMirror: exported through a network mirror whose origin could not
	// be reached (--trust-mirror-hashes): the packages match the mirror's
	// hashes, and the site key signed a SHA256SUMS of them; no publisher
	// vouches for them.
	TrustMirror = "mirror_hashes_only"
)

// SiteKeyed reports whether the tier's SHA256SUMS is signed by the site key
// rather than a publisher key (TrustSite, TrustMirror).
func SiteKeyed(tier string) bool { return tier == TrustSite || tier == TrustMirror }

// How a store came to accept a publisher key for a namespace (KeyPin.How).
const (
	// PinFirstUse: the first key any provider of the namespace was signed
	// with (trust on first use), recorded at that import.
	PinFirstUse = "first_use"
	// PinDeclared: the bundle declared it new for the namespace (export
	// --accept-new-publisher-key; bundle.PublisherKeyDecl).
	PinDeclared = "declared_by_bundle"
	// PinOperator: the import was given --accept-publisher-key.
	PinOperator = "accepted_at_import"
	// PinFile: the site's pins file (--publisher-pins) lists it.
	PinFile = "pins_file"
	// PinExisting: providers signed by it were in the store before the
	// store kept publisher-key pins (recorded at the first import that did).
	PinExisting = "in_store_before_pins"
	// PinStation: a transfer station's signed approval of the bundle
	// accepted it ('airgap approve --accept-publisher-key').
	PinStation = "approved_at_station"
)

// NamespaceKeys is one origin namespace's publisher-key history: the keys
// its providers' SHA256SUMS have been accepted with, oldest first. A store
// pins them (an import refuses a provider signed by any other key unless
// the change is approved); 'airgap inventory', 'airgap verify' and the
// catalog page show them.
type NamespaceKeys struct {
	Namespace string   `json:"namespace"` // NamespaceKey: "registry.terraform.io/hashicorp"
	Keys      []KeyPin `json:"keys"`
}

// KeyPin is one accepted key of a namespace.
type KeyPin struct {
	Fingerprint string `json:"fingerprint"` // upper-case hex of the primary key
	KeyID       string `json:"key_id"`
	Identity    string `json:"identity,omitempty"` // the key's first user ID, as the key says
	// Tier is TrustPublisher for a publisher key, TrustSite for a site
	// key accepted for re-signed providers of a namespace that has
	// publisher keys (a downgrade someone approved).
	Tier     string        `json:"tier"`
	Accepted time.Time     `json:"accepted"`         // when the import that accepted it ran
	Bundle   verify.Digest `json:"bundle,omitempty"` // which bundle brought it (none for PinExisting)
	How      string        `json:"how"`              // PinFirstUse, PinDeclared, …
	// Expires is the key's expiry by the newest self-signature seen on it
	// (a key re-published with a new expiry is the same key).
	Expires *time.Time `json:"expires,omitempty"`
	// Retired is when 'airgap keys retire' retired the key for the
	// namespace: it signs nothing new there from then on (index format 3).
	Retired *time.Time `json:"retired,omitempty"`
}

// NamespaceKey is the namespace of a provider as stores and pins name it:
// host/namespace in the form clients compare (lower case, no :443), e.g.
// "registry.terraform.io/hashicorp".
func NamespaceKey(host, namespace string) string { return canonicalAddr(host + "/" + namespace) }

// Namespace is p's NamespaceKey.
func (p ProviderVersion) NamespaceKey() string { return NamespaceKey(p.Host, p.Namespace) }

// Find returns the pin of fingerprint fp in n, or nil.
func (n *NamespaceKeys) Find(fp string) *KeyPin {
	for i := range n.Keys {
		if n.Keys[i].Fingerprint == fp {
			return &n.Keys[i]
		}
	}
	return nil
}

// HasTier reports whether n has a key of tier.
func (n *NamespaceKeys) HasTier(tier string) bool {
	for _, k := range n.Keys {
		if k.Tier == tier {
			return true
		}
	}
	return false
}
