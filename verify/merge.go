package verify

import (
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// MergeCopies makes the copies of one key in a keyring one key, as GnuPG
// does when it imports a key it already has: the copies' revocations,
// identities, identity revocations, subkeys and subkey revocations are
// put together, and where both copies hold the same self-signature slot
// (an identity's, a subkey's binding, the direct-key signature) the newer
// one is kept. So a keyring that holds a key and, before or after it, a
// copy carrying its revocation holds one revoked key, and every reader of
// keyrings (site, station and chain keyrings, the publisher keys a
// provider carries, even as separate documents) sees the revocation,
// whichever copy it would have found first. ReadKeyring applies it; a
// caller that joins the lists of several documents applies it again.
//
// go-crypto reads each copy as its own Entity and offers no merge of its
// own, so this is ours. Every packet kept here was verified by go-crypto
// when it read the copy it came in (a revocation or binding that does
// not check out is dropped there), so merging adds no unchecked claim.
// Cost: linear in the keys, subkeys and signatures of el (map lookups;
// duplicates are dropped in one pass at the end), whatever the number of
// copies. The order is that of each key's first copy.
func MergeCopies(el openpgp.EntityList) openpgp.EntityList {
	var out openpgp.EntityList
	byFP := map[string]*merging{}
	for _, e := range el {
		fp := Fingerprint(e)
		m := byFP[fp]
		if m == nil {
			byFP[fp] = &merging{e: e}
			out = append(out, e)
			continue
		}
		m.add(e)
	}
	for _, m := range byFP {
		if m.merged {
			m.dedupe()
		}
	}
	return out
}

// merging is a key whose copies are being put together.
type merging struct {
	e       *openpgp.Entity
	merged  bool
	subkeys map[string]int // subkey fingerprint -> index in e.Subkeys
}

func newer(have, s *packet.Signature) bool {
	return have == nil || s != nil && s.CreationTime.After(have.CreationTime)
}

// add puts what copy holds of the key into m.e (the same primary key).
func (m *merging) add(copy *openpgp.Entity) {
	e := m.e
	if !m.merged {
		m.merged = true
		m.subkeys = make(map[string]int, len(e.Subkeys))
		for i, sk := range e.Subkeys {
			m.subkeys[string(sk.PublicKey.Fingerprint)] = i
		}
		if e.Identities == nil {
			e.Identities = map[string]*openpgp.Identity{}
		}
	}
	e.Revocations = append(e.Revocations, copy.Revocations...)
	e.Signatures = append(e.Signatures, copy.Signatures...)
	if newer(e.SelfSignature, copy.SelfSignature) {
		e.SelfSignature = copy.SelfSignature
	}
	if e.PrivateKey == nil {
		e.PrivateKey = copy.PrivateKey
	}
	for name, id := range copy.Identities {
		have := e.Identities[name]
		if have == nil {
			e.Identities[name] = id
			continue
		}
		have.Revocations = append(have.Revocations, id.Revocations...)
		have.Signatures = append(have.Signatures, id.Signatures...)
		if newer(have.SelfSignature, id.SelfSignature) {
			have.SelfSignature = id.SelfSignature
		}
	}
	for _, sk := range copy.Subkeys {
		i, ok := m.subkeys[string(sk.PublicKey.Fingerprint)]
		if !ok {
			m.subkeys[string(sk.PublicKey.Fingerprint)] = len(e.Subkeys)
			e.Subkeys = append(e.Subkeys, sk)
			continue
		}
		have := &e.Subkeys[i]
		have.Revocations = append(have.Revocations, sk.Revocations...)
		if newer(have.Sig, sk.Sig) {
			have.Sig = sk.Sig
		}
		if have.PrivateKey == nil {
			have.PrivateKey = sk.PrivateKey
		}
	}
}

// dedupe drops the signatures the copies held alike (one pass per list).
func (m *merging) dedupe() {
	e := m.e
	e.Revocations, e.Signatures = uniqueSigs(e.Revocations), uniqueSigs(e.Signatures)
	for _, id := range e.Identities {
		id.Revocations, id.Signatures = uniqueSigs(id.Revocations), uniqueSigs(id.Signatures)
	}
	for i := range e.Subkeys {
		e.Subkeys[i].Revocations = uniqueSigs(e.Subkeys[i].Revocations)
	}
}

// sigID tells one signature from another: its type, issuer, time and the
// hash prefix it carries (a duplicate kept would only be counted twice,
// never change a decision).
type sigID struct {
	typ    packet.SignatureType
	issuer uint64
	at     int64 // Unix nanoseconds
	tag    [2]byte
}

func uniqueSigs(list []*packet.Signature) []*packet.Signature {
	if len(list) < 2 {
		return list
	}
	seen := make(map[sigID]bool, len(list))
	out := list[:0]
	for _, s := range list {
		id := sigID{typ: s.SigType, at: s.CreationTime.UnixNano(), tag: s.HashTag}
		if s.IssuerKeyId != nil {
			id.issuer = *s.IssuerKeyId
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, s)
		}
	}
	return out
}
