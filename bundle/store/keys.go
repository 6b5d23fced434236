package store

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Key retirements and revocations: what 'airgap keys retire' and 'airgap
// keys revoke' change in a store, and the revocations an import remembers
// from a bundle's carried keys. Each takes the store lock, replaces the
// index atomically and is recorded in its history (Index.KeyEvents).

// ErrNoSuchKey: 'keys retire' names a key the namespace has not had.
var ErrNoSuchKey = errors.New("the store has no such key for the namespace")

// newRevocations adds to ix the revocations the bundle's carried keys hold
// that the store has not seen, and returns them. A bundle whose revoked key
// signed one of its providers does not get here (the signature check
// refuses a revoked key); one that carries a revoked key beside the keys
// that signed (a registry lists its old and new keys) does, and the
// store remembers it, so a later bundle that strips the revocation gains
// nothing.
func newRevocations(ix *Index, m *bundle.Manifest, id verify.Digest, now time.Time) []RevokedKey {
	seen := revokedByFingerprint(ix.RevokedKeys)
	keyrings := check.KeyringCache{}
	var out []RevokedKey
	for _, p := range m.Catalog.Providers {
		kr, err := keyrings.Keyring(p)
		if err != nil {
			continue
		}
		for _, r := range verify.Revocations(kr) {
			if seen[r.Signer.Fingerprint] != nil {
				continue
			}
			rk := RevokedKey{Fingerprint: r.Signer.Fingerprint, KeyID: r.Signer.KeyID, Identity: r.Signer.Identity, Revoked: r.At,
				Reason: r.Reason, Recorded: now, Source: "bundle " + string(id)}
			out = append(out, rk)
			seen[rk.Fingerprint] = &out[len(out)-1]
		}
	}
	recordRevoked(ix, out, now)
	return out
}

// recordRevoked adds rs to the index's revocations and history.
func recordRevoked(ix *Index, rs []RevokedKey, now time.Time) {
	for _, r := range rs {
		ix.RevokedKeys = append(ix.RevokedKeys, r)
		ix.KeyEvents = append(ix.KeyEvents, KeyEvent{Time: now, Action: "revoke", Fingerprint: r.Fingerprint, Identity: r.Identity,
			Reason: fmt.Sprintf("revoked %s (%s)", r.Revoked.UTC().Format("2006-01-02"), orNoReason(r.Reason)), Source: r.Source})
	}
	sortRevoked(ix.RevokedKeys)
}

// KeyChangeResult says what RetireKey or RecordRevocations changed.
type KeyChangeResult struct {
	OK      bool       `json:"ok"`
	Changed bool       `json:"changed"` // false: the store had it already
	Events  []KeyEvent `json:"events"`
}

// RetireKey retires the key fp for namespace ns ('airgap keys retire'):
// from then on it signs nothing new for the namespace (a provider version
// whose signature the store does not already serve is refused; what it
// serves stays). The key must be one the namespace has had.
func RetireKey(root, ns, fp, reason string, now time.Time) (*KeyChangeResult, error) {
	ns = strings.ToLower(ns)
	return editKeys(root, func(ix *Index, hist []dist.NamespaceKeys) (*KeyChangeResult, error) {
		var n *dist.NamespaceKeys
		for i := range ix.PublisherKeys {
			if ix.PublisherKeys[i].Namespace == ns {
				n = &ix.PublisherKeys[i]
			}
		}
		if n == nil || n.Find(fp) == nil {
			// A store that predates pins: the key is in its history
			// (seeded) but not yet a row of the index.
			for _, h := range hist {
				if h.Namespace == ns && h.Find(fp) != nil {
					ix.PublisherKeys = mergePins(ix.PublisherKeys, []dist.NamespaceKeys{h}, nil)
					return retireIn(ix, ns, fp, reason, now)
				}
			}
			return nil, noSuchKey(ns, fp, hist)
		}
		return retireIn(ix, ns, fp, reason, now)
	})
}

// retireIn retires fp for ns in ix (which must have it).
func retireIn(ix *Index, ns, fp, reason string, now time.Time) (*KeyChangeResult, error) {
	for i := range ix.PublisherKeys {
		n := &ix.PublisherKeys[i]
		if n.Namespace != ns {
			continue
		}
		k := n.Find(fp)
		if k == nil {
			break
		}
		if k.Retired != nil {
			return &KeyChangeResult{OK: true, Events: []KeyEvent{}}, nil
		}
		t := now.UTC().Truncate(time.Second)
		k.Retired = &t
		e := KeyEvent{Time: t, Action: "retire", Namespace: ns, Fingerprint: fp, Identity: k.Identity, Reason: reason, Source: "airgap keys retire"}
		ix.KeyEvents = append(ix.KeyEvents, e)
		return &KeyChangeResult{OK: true, Changed: true, Events: []KeyEvent{e}}, nil
	}
	return nil, noSuchKey(ns, fp, ix.PublisherKeys)
}

func noSuchKey(ns, fp string, hist []dist.NamespaceKeys) error {
	var have []string
	for _, h := range hist {
		if h.Namespace == ns {
			for _, k := range h.Keys {
				have = append(have, describeKey(k.Fingerprint, k.Identity))
			}
		}
	}
	if len(have) == 0 {
		return fmt.Errorf("%w: %s has no publisher keys in this store\nhint: 'airgap inventory --store DIR' lists each namespace's keys; give the namespace as HOST/NAMESPACE", ErrNoSuchKey, dist.Printable(ns))
	}
	return fmt.Errorf("%w: %s has not had %s; it has %s\nhint: give one of its keys' fingerprints", ErrNoSuchKey, dist.Printable(ns), verify.GroupFingerprint(fp), strings.Join(have, ", "))
}

// RecordRevocations remembers the revocations rs ('airgap keys revoke'):
// each key signs nothing new from then on, and no signature dated at or
// after its revocation is accepted, whatever a later bundle's copy of the
// key says.
func RecordRevocations(root string, rs []verify.Revocation, now time.Time) (*KeyChangeResult, error) {
	return editKeys(root, func(ix *Index, _ []dist.NamespaceKeys) (*KeyChangeResult, error) {
		seen := revokedByFingerprint(ix.RevokedKeys)
		t := now.UTC().Truncate(time.Second)
		var add []RevokedKey
		for _, r := range rs {
			if seen[r.Signer.Fingerprint] != nil {
				continue
			}
			add = append(add, RevokedKey{Fingerprint: r.Signer.Fingerprint, KeyID: r.Signer.KeyID, Identity: r.Signer.Identity,
				Revoked: r.At, Reason: r.Reason, Recorded: t, Source: "airgap keys revoke"})
		}
		before := len(ix.KeyEvents)
		recordRevoked(ix, add, t)
		return &KeyChangeResult{OK: true, Changed: len(add) > 0, Events: append([]KeyEvent{}, ix.KeyEvents[before:]...)}, nil
	})
}

// editKeys runs edit on the store's index under its lock and writes the
// index if edit changed it.
func editKeys(root string, edit func(*Index, []dist.NamespaceKeys) (*KeyChangeResult, error)) (*KeyChangeResult, error) {
	unlock, err := lockExisting(root, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ix, err := readIndex(root)
	if err != nil {
		return nil, err
	}
	hist, _, err := History(root, ix)
	if err != nil {
		return nil, err
	}
	res, err := edit(ix, hist)
	if err != nil {
		return nil, fmt.Errorf("%w\nthe store was not changed", err)
	}
	if !res.Changed {
		return res, nil
	}
	sort.Slice(ix.PublisherKeys, func(i, j int) bool { return ix.PublisherKeys[i].Namespace < ix.PublisherKeys[j].Namespace })
	if err := WriteIndex(root, ix); err != nil {
		return nil, fmt.Errorf("writing the store index: %w\nthe store was not changed", err)
	}
	return res, nil
}
