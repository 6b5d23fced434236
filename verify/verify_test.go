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

func key(t *testing.T, cfg *packet.Config) *openpgp.Entity {
	t.Helper()
	if cfg == nil {
		cfg = &packet.Config{}
	}
	cfg.Algorithm, cfg.RSABits, cfg.DefaultHash = packet.PubKeyAlgoRSA, 2048, crypto.SHA256
	e, err := openpgp.NewEntity("t", "", "t@example.test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestGenerateKeyRoundTrip(t *testing.T) {
	var priv, pub bytes.Buffer
	e, err := verify.GenerateKey(&priv, &pub, verify.KeyOptions{Name: "Site Ops <ops@site.test>", Passphrase: []byte("s3cret")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify.GenerateKey(&bytes.Buffer{}, &bytes.Buffer{}, verify.KeyOptions{RSABits: 2048}); err == nil {
		t.Error("a 2048-bit site key was accepted")
	}
	if bits, _ := e.PrimaryKey.BitLength(); bits != 3072 || e.PrimaryKey.PubKeyAlgo != packet.PubKeyAlgoRSA {
		t.Errorf("key: %v bits, algo %v", bits, e.PrimaryKey.PubKeyAlgo)
	}
	if _, err := verify.ReadSigningKey(bytes.NewReader(priv.Bytes()), func() ([]byte, error) { return []byte("wrong"), nil }); err == nil {
		t.Error("a wrong passphrase decrypted the key")
	}
	signer, err := verify.ReadSigningKey(bytes.NewReader(priv.Bytes()), func() ([]byte, error) { return []byte("s3cret"), nil })
	if err != nil {
		t.Fatal(err)
	}
	var sig bytes.Buffer
	if err := verify.SignDetached(&sig, signer, strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	kr, err := verify.ReadKeyring(&pub)
	if err != nil {
		t.Fatal(err)
	}
	s, err := verify.CheckDetached(kr, strings.NewReader("hello"), sig.Bytes())
	if err != nil || s.Identity != "Site Ops <ops@site.test>" || s.Fingerprint != verify.Fingerprint(e) {
		t.Fatalf("check: %+v %v", s, err)
	}
}

func TestSignatureFailures(t *testing.T) {
	good := key(t, nil)
	other := key(t, nil)
	msg := "the manifest"
	sign := func(e *openpgp.Entity) []byte {
		var b bytes.Buffer
		if err := verify.SignDetached(&b, e, strings.NewReader(msg)); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	sig := sign(good)

	_, err := verify.CheckDetached(openpgp.EntityList{good}, strings.NewReader(msg+"!"), sig)
	if !errors.Is(err, verify.ErrBadSignature) {
		t.Errorf("altered message: %v", err)
	}
	_, err = verify.CheckDetached(openpgp.EntityList{other}, strings.NewReader(msg), sig)
	if !errors.Is(err, verify.ErrUnknownSigner) || !strings.Contains(err.Error(), verify.KeyID(good)) || !strings.Contains(err.Error(), verify.GroupFingerprint(verify.Fingerprint(good))) {
		t.Errorf("unknown signer (must name key ID and fingerprint): %v", err)
	}
	if _, err = verify.CheckDetached(openpgp.EntityList{good}, strings.NewReader(msg), nil); !errors.Is(err, verify.ErrUnsigned) {
		t.Errorf("no signature: %v", err)
	}
	if _, err = verify.CheckDetached(openpgp.EntityList{good}, strings.NewReader(msg), []byte("garbage")); !errors.Is(err, verify.ErrBadSignature) {
		t.Errorf("garbage signature: %v", err)
	}

	// A signature made after its key expired: the key was made two days ago
	// with a one-day lifetime, the signature 25 hours after. (Signatures
	// made while it was valid: TestSignatureJudgedAtCreation.)
	past := time.Now().Add(-48 * time.Hour)
	expired := key(t, &packet.Config{Time: func() time.Time { return past }, KeyLifetimeSecs: 86400})
	esig := signAt(t, expired, msg, past.Add(25*time.Hour))
	if _, err = verify.CheckDetached(openpgp.EntityList{expired}, strings.NewReader(msg), esig); !errors.Is(err, verify.ErrKeyExpired) {
		t.Errorf("expired key: %v", err)
	}

	// A revoked key.
	revoked := key(t, nil)
	rsig := sign(revoked)
	if err := revoked.RevokeKey(packet.KeyCompromised, "lost", nil); err != nil {
		t.Fatal(err)
	}
	armored, _ := verify.PublicArmor(revoked)
	kr, err := verify.ReadKeyring(strings.NewReader(armored))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = verify.CheckDetached(kr, strings.NewReader(msg), rsig); !errors.Is(err, verify.ErrKeyRevoked) {
		t.Errorf("revoked key: %v", err)
	}
}

func TestDigester(t *testing.T) {
	d := verify.NewDigester()
	d.Write([]byte("abc"))
	want := verify.DigestBytes([]byte("abc"))
	if err := d.Check(want, 3); err != nil {
		t.Fatal(err)
	}
	if err := d.Check(want, 4); !errors.Is(err, verify.ErrSizeMismatch) {
		t.Error(err)
	}
	if err := d.Check(verify.DigestBytes([]byte("abd")), 3); !errors.Is(err, verify.ErrDigestMismatch) {
		t.Error(err)
	}
	for _, bad := range []string{"sha256:ABC", "md5:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("A", 64)} {
		if _, err := verify.ParseDigest(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestGroupFingerprintRoundTrip(t *testing.T) {
	const v4 = "5A3F9C2177B01D4E0A9C5A3F9C2177B01D4E0A9C"
	got := verify.GroupFingerprint(v4)
	if want := "5A3F 9C21 77B0 1D4E 0A9C  5A3F 9C21 77B0 1D4E 0A9C"; got != want {
		t.Fatalf("GroupFingerprint(v4) = %q, want %q", got, want)
	}
	v6 := strings.Repeat("0123456789ABCDEF", 4)
	if g := verify.GroupFingerprint(v6); strings.Count(g, " ") != 15 || strings.Contains(g, "  ") {
		t.Fatalf("GroupFingerprint(v6) = %q: want 16 groups of four with single spaces", g)
	}
	for _, in := range []string{got, verify.GroupFingerprint(v6), "5a3f:9c21 77b0\t1d4e 0a9c\u00a05a3f 9c21 77b0 1d4e 0a9c\n"} {
		fp, err := verify.ParseFingerprint(in)
		if err != nil || verify.GroupFingerprint(fp) != verify.GroupFingerprint(strings.ToUpper(strings.NewReplacer(" ", "", ":", "", "\t", "", "\u00a0", "", "\n", "").Replace(in))) {
			t.Fatalf("ParseFingerprint(%q) = %q, %v", in, fp, err)
		}
	}
	for _, odd := range []string{"", "ABCD", "not hex at all but forty characters long!"} {
		if g := verify.GroupFingerprint(odd); g != odd {
			t.Fatalf("GroupFingerprint(%q) = %q, want it unchanged", odd, g)
		}
	}
}
