package verify

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Checked is what a good detached signature says.
type Checked struct {
	Signer Signer
	// Created is the signature's creation time: the moment its key was judged at.
	Created time.Time
	// KeyExpires is when the signing key expires according to its newest
	// self-signature (zero: never). It may be in the past: a signature made
	// while the key was valid stays good after the key expires.
	KeyExpires time.Time
}

// ExpiredSince reports whether the signing key has expired by now (the
// signature itself was made while it was valid).
func (c Checked) ExpiredSince(now time.Time) bool {
	return !c.KeyExpires.IsZero() && now.After(c.KeyExpires)
}

// CheckSignature checks a detached signature (binary or armored) over message
// against keyring, judging the key as of the signature's creation time rather
// than this machine's clock:
//
//   - the key (and the signing subkey, if a subkey signed) must have existed and
//     not yet expired at the creation time, by its newest self-signature — so
//     a key that has since expired, or was re-published later with a new
//     expiry, still vouches for what it signed while valid, and a signature
//     made after the key expired is refused;
//   - a key with any revocation (of the primary key, the signing subkey or the
//     primary identity) is refused whatever the dates, because a revocation
//     is how a publisher says its key may be in other hands, and whoever holds
//     it can backdate a signature;
//   - the signature's own expiry, if it has one (SHA256SUMS signatures carry
//     none), is judged at its creation too — or, for a key re-published
//     since, at its newest self-signature, which go-crypto will not accept
//     as dated after "now".
//
// The clock of this machine is not consulted at all. Every failure is one of
// the sentinel errors, wrapped with the issuer the signature names.
func CheckSignature(keyring openpgp.EntityList, message io.Reader, sig []byte) (Checked, error) {
	if len(bytes.TrimSpace(sig)) == 0 {
		return Checked{}, ErrUnsigned
	}
	issuer := describeIssuer(sig)
	raw := sig
	if bytes.HasPrefix(bytes.TrimSpace(sig), []byte("-----BEGIN PGP SIGNATURE")) {
		block, err := armor.Decode(bytes.NewReader(sig))
		if err != nil {
			return Checked{}, fmt.Errorf("%w: unreadable armor: %v", ErrBadSignature, err)
		}
		if raw, err = io.ReadAll(io.LimitReader(block.Body, int64(len(sig)))); err != nil {
			return Checked{}, fmt.Errorf("%w: unreadable armor: %v", ErrBadSignature, err)
		}
	}
	created, at, ok := judgeTime(keyring, raw)
	if !ok {
		// No packet names a key we have, or the packets are malformed: the
		// library says which, in its own words.
		_, err := openpgp.CheckDetachedSignature(keyring, message, bytes.NewReader(raw), nil)
		if err == nil {
			err = fmt.Errorf("%w: unreadable signature", ErrBadSignature)
		}
		return Checked{}, classify(err, issuer)
	}
	e, err := openpgp.CheckDetachedSignature(keyring, message, bytes.NewReader(raw), &packet.Config{Time: func() time.Time { return at }})
	if err != nil && e == nil {
		return Checked{}, classify(err, issuer)
	}
	// The signature matches e's key; judge the key at the creation time
	// (this also says what was wrong when the library refused a date).
	expires, perr := keyValidAt(e, raw, created)
	if perr != nil {
		return Checked{}, fmt.Errorf("%w (%s)", perr, issuer)
	}
	if err != nil {
		return Checked{}, classify(err, issuer)
	}
	return Checked{Signer: Signer{KeyID: KeyID(e), Fingerprint: Fingerprint(e), Identity: Identity(e)}, Created: created, KeyExpires: expires}, nil
}

// judgeTime finds the signature packet the library will check (the first
// whose issuer has a signing key in keyring) and returns its creation time
// and the time to hand the library as "now": the creation time, moved forward
// past the newest self-signature of the candidate keys. The library refuses a
// self-signature dated after "now", and a key re-published with a new
// expiry carries one; validity at the creation time is checked after by
// keyValidAt.
func judgeTime(keyring openpgp.EntityList, raw []byte) (created, at time.Time, ok bool) {
	pr := packet.NewReader(bytes.NewReader(raw))
	for range 64 {
		p, err := pr.Next()
		if err != nil {
			return time.Time{}, time.Time{}, false
		}
		s, isSig := p.(*packet.Signature)
		if !isSig || s.IssuerKeyId == nil {
			return time.Time{}, time.Time{}, false
		}
		keys := keyring.KeysByIdUsage(*s.IssuerKeyId, packet.KeyFlagSign)
		if len(keys) == 0 {
			continue
		}
		created, at = s.CreationTime, s.CreationTime
		later := func(t time.Time) {
			if t.After(at) {
				at = t
			}
		}
		for _, k := range keys {
			if ps, _ := k.Entity.PrimarySelfSignature(); ps != nil {
				later(ps.CreationTime)
			}
			if k.PublicKey != k.Entity.PrimaryKey && k.SelfSignature != nil {
				later(k.SelfSignature.CreationTime)
				if k.SelfSignature.EmbeddedSignature != nil {
					later(k.SelfSignature.EmbeddedSignature.CreationTime)
				}
			}
		}
		return created, at, true
	}
	return time.Time{}, time.Time{}, false
}

// keyValidAt applies the policy of CheckSignature to the key of e that made
// the first signature in raw naming one of e's keys, and returns when it
// expires (zero: never).
func keyValidAt(e *openpgp.Entity, raw []byte, t time.Time) (time.Time, error) {
	pr := packet.NewReader(bytes.NewReader(raw))
	var issuer uint64
	for {
		p, err := pr.Next()
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: the signature names none of the signer's keys", ErrBadSignature)
		}
		if s, ok := p.(*packet.Signature); ok && s.IssuerKeyId != nil && len(openpgp.EntityList{e}.KeysById(*s.IssuerKeyId)) > 0 {
			issuer = *s.IssuerKeyId
			break
		}
	}
	self, ident := e.PrimarySelfSignature()
	if len(e.Revocations) > 0 || ident != nil && len(ident.Revocations) > 0 {
		return time.Time{}, ErrKeyRevoked
	}
	if self == nil {
		return time.Time{}, fmt.Errorf("%w: the key has no self-signature", ErrBadSignature)
	}
	pub, bind := e.PrimaryKey, self
	if issuer != e.PrimaryKey.KeyId {
		for _, sk := range e.Subkeys {
			if sk.PublicKey.KeyId == issuer {
				if len(sk.Revocations) > 0 {
					return time.Time{}, ErrKeyRevoked
				}
				pub, bind = sk.PublicKey, sk.Sig
			}
		}
	}
	day := func(x time.Time) string { return x.UTC().Format("2006-01-02 15:04:05Z") }
	expires := expiry(e.PrimaryKey, self)
	if sub := expiry(pub, bind); !sub.IsZero() && (expires.IsZero() || sub.Before(expires)) {
		expires = sub
	}
	for _, k := range []*packet.PublicKey{e.PrimaryKey, pub} {
		if t.Before(k.CreationTime) {
			return time.Time{}, fmt.Errorf("%w: the signature (made %s) predates its key (created %s)", ErrBadSignature, day(t), day(k.CreationTime))
		}
	}
	if e.PrimaryKey.KeyExpired(self, t) || pub.KeyExpired(bind, t) {
		return time.Time{}, fmt.Errorf("%w: the signature was made %s, after the key expired on %s", ErrKeyExpired, day(t), day(expires))
	}
	return expires, nil
}

func expiry(k *packet.PublicKey, self *packet.Signature) time.Time {
	if self == nil || self.KeyLifetimeSecs == nil || *self.KeyLifetimeSecs == 0 {
		return time.Time{}
	}
	return k.CreationTime.Add(time.Duration(*self.KeyLifetimeSecs) * time.Second)
}
