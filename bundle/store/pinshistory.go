package store

import (
	"bytes"
	"sort"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// newerExpiry reports whether a pinned key's copy in the bundle expires
// later than the store recorded (a key re-published with a new expiry).
func newerExpiry(hist []dist.NamespaceKeys, ds []KeyDecision) bool {
	byNS := make(map[string]*dist.NamespaceKeys, len(hist))
	for i := range hist {
		byNS[hist[i].Namespace] = &hist[i]
	}
	for _, d := range ds {
		if n := byNS[d.Namespace]; n != nil {
			if k := n.Find(d.Signer.Fingerprint); k != nil && (k.Expires == nil || d.Expires.After(*k.Expires)) {
				return true
			}
		}
	}
	return false
}

// mergePins adds the seeded rows and the decisions' new pins and later
// expiries to the index's pins; namespaces stay sorted, keys in the order
// they were accepted.
func mergePins(have, seeded []dist.NamespaceKeys, ds []KeyDecision) []dist.NamespaceKeys {
	byNS := map[string]*dist.NamespaceKeys{}
	out := append([]dist.NamespaceKeys(nil), have...)
	out = append(out, seeded...)
	for i := range out {
		out[i].Keys = append([]dist.KeyPin(nil), out[i].Keys...)
	}
	for i := range out {
		byNS[out[i].Namespace] = &out[i]
	}
	for _, d := range ds {
		n := byNS[d.Namespace]
		switch {
		case d.Pin != nil && n == nil:
			out = append(out, dist.NamespaceKeys{Namespace: d.Namespace, Keys: []dist.KeyPin{*d.Pin}})
			byNS = nil // out moved: rebuild
		case d.Pin != nil && n.Find(d.Pin.Fingerprint) == nil:
			n.Keys = append(n.Keys, *d.Pin)
		case d.Status == keyPinned && d.Expires != nil && n != nil:
			if k := n.Find(d.Signer.Fingerprint); k != nil && (k.Expires == nil || d.Expires.After(*k.Expires)) {
				e := *d.Expires
				k.Expires = &e
			}
		}
		if byNS == nil {
			byNS = map[string]*dist.NamespaceKeys{}
			for i := range out {
				byNS[out[i].Namespace] = &out[i]
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

// History is the publisher-key history of the store at root: the index's
// rows, plus, for each namespace of the catalog that has none (a store
// that predates pins), the keys its providers were signed by, read from
// the store's SHA256SUMS and signatures (seeded, how: in_store_before_pins;
// the import that records them is the first to pin). A provider whose
// signature no longer checks out is left out of seeding ('airgap
// inventory' says so). Cost: one signature check per provider version of
// the unrecorded namespaces, each distinct key set parsed once.
func History(root string, ix *Index) (hist, seeded []dist.NamespaceKeys, err error) {
	rows := map[string]bool{}
	for _, n := range ix.PublisherKeys {
		rows[n.Namespace] = true
	}
	since := time.Time{}
	if len(ix.Imports) > 0 {
		since = ix.Imports[len(ix.Imports)-1].Time
	}
	byNS := map[string]*dist.NamespaceKeys{}
	keyrings := check.KeyringCache{}
	for _, p := range ix.Catalog.Providers {
		ns := p.NamespaceKey()
		if rows[ns] {
			continue
		}
		c, ok := storedSigner(root, p, keyrings)
		if !ok {
			continue
		}
		n := byNS[ns]
		if n == nil {
			n = &dist.NamespaceKeys{Namespace: ns}
			byNS[ns] = n
		}
		if n.Find(c.Signer.Fingerprint) == nil {
			k := dist.KeyPin{Fingerprint: c.Signer.Fingerprint, KeyID: c.Signer.KeyID, Identity: c.Signer.Identity,
				Tier: check.Trust(p), Accepted: since, How: dist.PinExisting}
			if !c.KeyExpires.IsZero() {
				e := c.KeyExpires.UTC()
				k.Expires = &e
			}
			n.Keys = append(n.Keys, k)
		}
	}
	for _, n := range byNS {
		// A namespace whose only providers are site re-signed has no
		// publisher key to pin (see the policy above).
		if n.HasTier(dist.TrustPublisher) {
			seeded = append(seeded, *n)
		}
	}
	sort.Slice(seeded, func(i, j int) bool { return seeded[i].Namespace < seeded[j].Namespace })
	hist = append(append([]dist.NamespaceKeys(nil), ix.PublisherKeys...), seeded...)
	sort.Slice(hist, func(i, j int) bool { return hist[i].Namespace < hist[j].Namespace })
	return hist, seeded, nil
}

// storedSigner checks p's SHA256SUMS signature from the store's blobs.
func storedSigner(root string, p dist.ProviderVersion, keyrings check.KeyringCache) (verify.Checked, bool) {
	sums, err1 := readBlob(root, p.Shasums, dist.MaxShasumsSize)
	sig, err2 := readBlob(root, p.ShasumsSig, bundle.MaxSignatureSize)
	if err1 != nil || err2 != nil {
		return verify.Checked{}, false
	}
	kr, err := keyrings.Keyring(p)
	if err != nil {
		return verify.Checked{}, false
	}
	c, err := verify.CheckSignature(kr, bytes.NewReader(sums), sig)
	return c, err == nil
}
