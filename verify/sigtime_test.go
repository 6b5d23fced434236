package verify_test

import (
	"bytes"
	"crypto"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/airgap/airgap/verify"
)

// reread round-trips e's public key through its armor, as a key carried in a
// bundle or published by a registry is read.
func reread(t *testing.T, e *openpgp.Entity) openpgp.EntityList {
	t.Helper()
	a, err := verify.PublicArmor(e)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := verify.ReadKeyring(strings.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// signAt makes a binary detached signature by e's primary key dated at,
// whether or not the key was valid then (the library's signing functions
// refuse to date a signature outside the key's life, which is what an
// attacker or a careless signer need not do).
func signAt(t *testing.T, e *openpgp.Entity, msg string, at time.Time) []byte {
	t.Helper()
	id := e.PrimaryKey.KeyId
	sig := &packet.Signature{Version: 4, SigType: packet.SigTypeBinary, PubKeyAlgo: e.PrimaryKey.PubKeyAlgo,
		Hash: crypto.SHA256, CreationTime: at, IssuerKeyId: &id}
	h, err := sig.PrepareSign(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Write([]byte(msg))
	if err := sig.Sign(h, e.PrivateKey, nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := sig.Serialize(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSignatureJudgedAtCreation: real RSA keys that expire between signing
// and checking, as HashiCorp's did on 2026-04-18 (and was re-published with a
// new expiry); offline clocks cannot be trusted either.
func TestSignatureJudgedAtCreation(t *testing.T) {
	const msg = "0123  terraform-provider-x_1.0.0_linux_amd64.zip\n"
	made := time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second)
	// Valid for ten days from thirty days ago: expired twenty days ago.
	pub := key(t, &packet.Config{Time: func() time.Time { return made }, KeyLifetimeSecs: 10 * 86400})
	expires := made.Add(10 * 24 * time.Hour)
	during := signAt(t, pub, msg, made.Add(5*24*time.Hour))
	after := signAt(t, pub, msg, made.Add(11*24*time.Hour))

	// The library's own check, judged by this machine's clock, refuses it:
	// that is what this policy changes.
	if _, err := openpgp.CheckDetachedSignature(reread(t, pub), strings.NewReader(msg), bytes.NewReader(during), nil); err == nil {
		t.Fatal("the library accepted a key that expired at the time of checking; the test proves nothing")
	}

	c, err := verify.CheckSignature(reread(t, pub), strings.NewReader(msg), during)
	if err != nil {
		t.Fatalf("a signature made while the key was valid: %v", err)
	}
	if !c.Created.Equal(made.Add(5*24*time.Hour)) || !c.KeyExpires.Equal(expires) || !c.ExpiredSince(time.Now()) || c.ExpiredSince(made) {
		t.Errorf("checked: created %v, key expires %v (want %v)", c.Created, c.KeyExpires, expires)
	}
	if c.Signer.Fingerprint != verify.Fingerprint(pub) {
		t.Errorf("signer %v", c.Signer)
	}
	_, err = verify.CheckSignature(reread(t, pub), strings.NewReader(msg), after)
	if !errors.Is(err, verify.ErrKeyExpired) || !strings.Contains(err.Error(), expires.UTC().Format("2006-01-02")) {
		t.Errorf("a signature made after the key expired: %v", err)
	}
	if _, err := verify.CheckSignature(reread(t, pub), strings.NewReader(msg+"x"), during); !errors.Is(err, verify.ErrBadSignature) {
		t.Errorf("altered message: %v", err)
	}
	// Re-published: the same key with a new self-signature, made today, that
	// extends its life by a year. Old signatures stay good, and so do ones
	// made after the first expiry.
	renew := &packet.Config{Time: func() time.Time { return time.Now().Add(-time.Hour) }, KeyLifetimeSecs: 400 * 86400}
	delete(pub.Identities, "t <t@example.test>")
	if err := pub.AddUserId("t", "", "t@example.test", renew); err != nil {
		t.Fatal(err)
	}
	for name, sig := range map[string][]byte{"made before the first expiry": during, "made after the first expiry": after} {
		c, err := verify.CheckSignature(reread(t, pub), strings.NewReader(msg), sig)
		if err != nil {
			t.Errorf("re-published key, signature %s: %v", name, err)
			continue
		}
		if c.ExpiredSince(time.Now()) {
			t.Errorf("re-published key reported expired: %v", c.KeyExpires)
		}
	}

	// Revoked later, for any reason: refused, even for signatures made before.
	revoked := key(t, &packet.Config{Time: func() time.Time { return made }})
	old := signAt(t, revoked, msg, made.Add(time.Hour))
	if _, err := verify.CheckSignature(reread(t, revoked), strings.NewReader(msg), old); err != nil {
		t.Fatalf("before the revocation: %v", err)
	}
	if err := revoked.RevokeKey(packet.KeySuperseded, "rotated", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := verify.CheckSignature(reread(t, revoked), strings.NewReader(msg), old); !errors.Is(err, verify.ErrKeyRevoked) {
		t.Errorf("a key revoked after signing: %v", err)
	}
}

// TestSignaturePredatingKey: a signature whose creation time is before its
// key existed is refused (the library alone would accept it once the clock
// is moved past the key's self-signature).
func TestSignaturePredatingKey(t *testing.T) {
	const msg = "m"
	e := key(t, nil)
	sig := signAt(t, e, msg, e.PrimaryKey.CreationTime.Add(-time.Hour))
	if _, err := verify.CheckSignature(reread(t, e), strings.NewReader(msg), sig); !errors.Is(err, verify.ErrBadSignature) || !strings.Contains(err.Error(), "predates") {
		t.Errorf("a signature older than its key: %v", err)
	}
}
