package store

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// What the store remembers about trust beyond its catalog (index format
// 3): who signed each version it serves, the approvals each import
// accepted, the versions whose signature an import replaced, the
// revocations it has seen and the history of retirements and revocations.

// VersionSigner is who signed a provider version's SHA256SUMS, as served.
type VersionSigner struct {
	Provider    string    `json:"provider"` // dist.ProviderVersion.Key
	Fingerprint string    `json:"fingerprint"`
	KeyID       string    `json:"key_id"`
	Identity    string    `json:"identity,omitempty"`
	Created     time.Time `json:"created"` // the signature's date
	// Signature is the ShasumsSig blob this was read from: the entry is
	// current only while the catalog serves that signature.
	Signature verify.Digest `json:"signature"`
}

// Signer is v as a verify.Signer.
func (v VersionSigner) Signer() verify.Signer {
	return verify.Signer{KeyID: v.KeyID, Fingerprint: v.Fingerprint, Identity: v.Identity}
}

// ApprovalRecord is one station approval an import accepted
// (ImportEntry.Approvals; an export from the store carries it onwards in
// the chain of custody, bundle.HopApproval).
type ApprovalRecord struct {
	Blob    verify.Digest `json:"blob"` // the approval file, a blob of role approval
	Station verify.Signer `json:"station"`
	// StationKey is the blob (role bundle-key) of the station's armored
	// public key as the station keyring had it when the import accepted
	// the approval: an export from the store carries it beside the
	// approval, so the next enclave checks the approval again.
	StationKey    verify.Digest           `json:"station_key,omitempty"`
	Time          time.Time               `json:"time"`
	Note          string                  `json:"note,omitempty"`
	PublisherKeys []approval.PublisherKey `json:"publisher_keys,omitempty"`
}

// TrustChange is a provider version the store already served whose
// SHA256SUMS or signature an import replaces (ImportEntry.TrustChanges).
type TrustChange = report.TrustChange

// keyName is a key for people: grouped fingerprint and identity.
func keyName(s verify.Signer) string { return report.KeyName(s) }

// RevokedKey is a key revocation the store has seen.
type RevokedKey struct {
	Fingerprint string    `json:"fingerprint"`
	KeyID       string    `json:"key_id"`
	Identity    string    `json:"identity,omitempty"`
	Revoked     time.Time `json:"revoked"`          // the revocation's own date
	Reason      string    `json:"reason,omitempty"` // as the revocation gives it
	Recorded    time.Time `json:"recorded"`         // when the store learnt of it
	// Source is where it was seen: "bundle sha256:…" or "airgap keys revoke".
	Source string `json:"source"`
}

// KeyEvent is one retirement or revocation in the store's history.
type KeyEvent struct {
	Time        time.Time `json:"time"`
	Action      string    `json:"action"`              // "retire" or "revoke"
	Namespace   string    `json:"namespace,omitempty"` // retire: the namespace
	Fingerprint string    `json:"fingerprint"`
	Identity    string    `json:"identity,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Source      string    `json:"source,omitempty"`
}

func (e KeyEvent) String() string {
	q := dist.Printable
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s key %s", e.Time.UTC().Format("2006-01-02T15:04:05Z"), e.Action+"d", verify.GroupFingerprint(e.Fingerprint))
	if e.Identity != "" {
		fmt.Fprintf(&b, " (%s)", q(e.Identity))
	}
	if e.Namespace != "" {
		fmt.Fprintf(&b, " for %s", q(e.Namespace))
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, ": %s", q(e.Reason))
	}
	if e.Source != "" {
		fmt.Fprintf(&b, " (%s)", q(e.Source))
	}
	return b.String()
}

// SignerTable is Index.Signers by provider version key.
type SignerTable map[string]VersionSigner

// SignersByVersion indexes a list of signers (Index.Signers) by provider key.
func SignersByVersion(list []VersionSigner) SignerTable {
	t := make(SignerTable, len(list))
	for _, s := range list {
		t[s.Provider] = s
	}
	return t
}

// Of is the recorded signer of p, if current (of the signature served).
func (t SignerTable) Of(p *dist.ProviderVersion) (VersionSigner, bool) {
	s, ok := t[p.Key()]
	return s, ok && s.Signature == p.ShasumsSig
}

// setSigners stores t in ix, sorted, without versions the catalog does
// not have.
func (ix *Index) setSigners(t SignerTable) {
	ix.Signers = ix.Signers[:0:0]
	for _, p := range ix.Catalog.Providers {
		if s, ok := t.Of(&p); ok {
			ix.Signers = append(ix.Signers, s)
		}
	}
	sort.Slice(ix.Signers, func(i, j int) bool { return ix.Signers[i].Provider < ix.Signers[j].Provider })
}

// trustChanges lists the provider versions of m that cat already has whose
// SHA256SUMS or signature m replaces, with the key before (from signers)
// and after (from the checker's facts). The import records them; verify
// --against shows them from the inventory.
func trustChanges(cat *dist.Catalog, signers SignerTable, m *bundle.Manifest, checked *check.Result) []TrustChange {
	have, _ := versionMaps(cat)
	var out []TrustChange
	for _, p := range m.Catalog.Providers {
		old := have[p.Key()]
		if old == nil || old.Shasums == p.Shasums && old.ShasumsSig == p.ShasumsSig {
			continue
		}
		c := TrustChange{Provider: p.String(), Change: "signature"}
		if old.Shasums != p.Shasums {
			c.Change = "sha256sums"
		}
		if s, ok := signers.Of(old); ok {
			c.Before = s.Signer()
		}
		if checked != nil {
			if f := checked.Facts(p.Key()); f != nil {
				c.After = f.Signer
			}
		}
		out = append(out, c)
	}
	return out
}

// recordSigners records, for every provider version of m with checked
// facts, who signed the SHA256SUMS the store will serve (the bundle's:
// Merge takes the bundle's signature), and drops entries of versions the
// catalog no longer has.
func recordSigners(ix *Index, m *bundle.Manifest, checked *check.Result) {
	t := SignersByVersion(ix.Signers)
	for _, p := range m.Catalog.Providers {
		if f := checked.Facts(p.Key()); f != nil {
			t[p.Key()] = VersionSigner{Provider: p.Key(), Fingerprint: f.Signer.Fingerprint, KeyID: f.Signer.KeyID, Identity: f.Signer.Identity,
				Created: f.Created, Signature: p.ShasumsSig}
		}
	}
	ix.setSigners(t)
}

// backfillSigners records the signer of each catalog provider version that
// has no current entry, from the store's own SHA256SUMS and signature
// (stores imported into by an airgap before format 3). Cost: one
// signature check per such version, once; a version whose signature no
// longer checks out is left without one (inventory says why).
func backfillSigners(root string, ix *Index) {
	t := SignersByVersion(ix.Signers)
	keyrings := check.KeyringCache{}
	for i := range ix.Catalog.Providers {
		p := &ix.Catalog.Providers[i]
		if _, ok := t.Of(p); ok {
			continue
		}
		if c, ok := storedSigner(root, *p, keyrings); ok {
			t[p.Key()] = VersionSigner{Provider: p.Key(), Fingerprint: c.Signer.Fingerprint, KeyID: c.Signer.KeyID, Identity: c.Signer.Identity,
				Created: c.Created.UTC(), Signature: p.ShasumsSig}
		}
	}
	ix.setSigners(t)
}

// sortRevoked keeps RevokedKeys sorted by fingerprint.
func sortRevoked(rs []RevokedKey) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Fingerprint < rs[j].Fingerprint })
}

// revokedByFingerprint indexes rs.
func revokedByFingerprint(rs []RevokedKey) map[string]*RevokedKey {
	out := make(map[string]*RevokedKey, len(rs))
	for i := range rs {
		out[rs[i].Fingerprint] = &rs[i]
	}
	return out
}

// Provenance maps each version the import history added (its catalog
// lines: "provider ADDRESS VERSION …", "module ADDRESS VERSION") by
// dist.VersionKey to the newest import that added it. One pass over the
// history: time and memory linear in its lines.
func Provenance(ix *Index) map[string]*ImportEntry {
	out := map[string]*ImportEntry{}
	for i := range ix.Imports {
		for _, line := range ix.Imports[i].Added {
			if f := strings.Fields(line); len(f) >= 3 {
				out[dist.VersionKey(f[1], f[2])] = &ix.Imports[i]
			}
		}
	}
	return out
}
