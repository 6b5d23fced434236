package verify

import (
	"bytes"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// mergeCopies makes the copies of one key in a keyring one key, as GnuPG
// does when it imports a key it already has: the copies' revocations,
// identities, identity revocations, subkeys and subkey revocations are
// put together, and where both copies hold the same self-signature slot
// (an identity's, a subkey's binding, the direct-key signature) the newer
// one is kept. So a keyring that holds a key and, before or after it, a
// copy carrying its revocation holds one revoked key — every reader of
// keyrings (site, station, chain, carried publisher keys) sees the
// revocation, whichever copy it would have found first.
//
// go-crypto reads each copy as its own Entity and offers no merge of its
// own, so this is ours. Every packet kept here was verified by go-crypto
// when it read the copy it came in (a revocation or binding that does
// not check out is dropped there), so merging adds no unchecked claim.
// Cost: a map lookup per key and, for duplicates, a comparison per pair
// of signatures of one slot — at worst MaxKeySignatures² (65,536 cheap
// field comparisons), as ReadKeyring bounds keys and signatures before
// any of this runs. The order is that of each key's first copy.
func mergeCopies(el openpgp.EntityList) openpgp.EntityList {
	var out openpgp.EntityList
	byFP := map[string]*openpgp.Entity{}
	for _, e := range el {
		fp := Fingerprint(e)
		first := byFP[fp]
		if first == nil {
			byFP[fp] = e
			out = append(out, e)
			continue
		}
		mergeInto(first, e)
	}
	return out
}

// mergeInto adds what copy holds of the key to e (the same primary key).
func mergeInto(e, copy *openpgp.Entity) {
	e.Revocations = addSigs(e.Revocations, copy.Revocations...)
	e.Signatures = addSigs(e.Signatures, copy.Signatures...)
	if e.SelfSignature == nil || copy.SelfSignature != nil && copy.SelfSignature.CreationTime.After(e.SelfSignature.CreationTime) {
		e.SelfSignature = copy.SelfSignature
	}
	if e.PrivateKey == nil {
		e.PrivateKey = copy.PrivateKey
	}
	if e.Identities == nil {
		e.Identities = map[string]*openpgp.Identity{}
	}
	for name, id := range copy.Identities {
		have := e.Identities[name]
		if have == nil {
			e.Identities[name] = id
			continue
		}
		have.Revocations = addSigs(have.Revocations, id.Revocations...)
		have.Signatures = addSigs(have.Signatures, id.Signatures...)
		if have.SelfSignature == nil || id.SelfSignature != nil && id.SelfSignature.CreationTime.After(have.SelfSignature.CreationTime) {
			have.SelfSignature = id.SelfSignature
		}
	}
	for _, sk := range copy.Subkeys {
		i := subkeyIndex(e, sk.PublicKey)
		if i < 0 {
			e.Subkeys = append(e.Subkeys, sk)
			continue
		}
		have := &e.Subkeys[i]
		have.Revocations = addSigs(have.Revocations, sk.Revocations...)
		if have.Sig == nil || sk.Sig != nil && sk.Sig.CreationTime.After(have.Sig.CreationTime) {
			have.Sig = sk.Sig
		}
		if have.PrivateKey == nil {
			have.PrivateKey = sk.PrivateKey
		}
	}
}

func subkeyIndex(e *openpgp.Entity, pk *packet.PublicKey) int {
	for i, sk := range e.Subkeys {
		if bytes.Equal(sk.PublicKey.Fingerprint, pk.Fingerprint) {
			return i
		}
	}
	return -1
}

// addSigs appends to list the signatures of more it does not hold yet (the
// same signature in two copies is one).
func addSigs(list []*packet.Signature, more ...*packet.Signature) []*packet.Signature {
	for _, s := range more {
		dup := false
		for _, h := range list {
			if h == s || sameSig(h, s) {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, s)
		}
	}
	return list
}

// sameSig: a and b are the same signature (its type, issuer, time and
// the hash prefix it carries: a duplicate kept would only be counted
// twice, never change a decision).
func sameSig(a, b *packet.Signature) bool {
	return a.SigType == b.SigType && a.CreationTime.Equal(b.CreationTime) && a.HashTag == b.HashTag &&
		(a.IssuerKeyId == nil) == (b.IssuerKeyId == nil) && (a.IssuerKeyId == nil || *a.IssuerKeyId == *b.IssuerKeyId)
}
