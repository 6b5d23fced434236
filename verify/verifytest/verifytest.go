// Package verifytest builds hostile OpenPGP keys for tests: keys whose
// parameters are far larger (or smaller) than any publisher's, with bogus
// self-signatures that cost full-size arithmetic to check. It is for tests
// only; nothing here is a usable key.
package verifytest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"math/big"

	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// Spec describes a crafted key.
type Spec struct {
	// Algo is 17 (DSA) or 1 (RSA).
	Algo byte
	// Bits is the size of p (DSA) or n (RSA); QBits the size of DSA's q
	// (0: Bits).
	Bits, QBits int
	// Sigs is the number of (bogus) self-signatures on its user ID (0: 1).
	Sigs int
}

// HugeDSA is an armored DSA key whose p and q both have bits bits: the few
// KiB a registry's download document can carry in
// signing_keys.gpg_public_keys[].ascii_armor.
func HugeDSA(bits int) string { return Armored(Spec{Algo: 17, Bits: bits}) }

// Armored returns one armored public key block holding the keys specs
// describe, one after the other.
func Armored(specs ...Spec) string {
	var raw []byte
	for _, s := range specs {
		raw = append(raw, Key(s)...)
	}
	var out bytes.Buffer
	w, _ := armor.Encode(&out, "PGP PUBLIC KEY BLOCK", nil)
	w.Write(raw)
	w.Close()
	return out.String()
}

// Key returns the binary packets of one crafted key: a v4 public key, one
// user ID and s.Sigs v4 positive certifications that name the key as their
// issuer and whose values are full size (so checking one costs the full
// computation) but wrong.
func Key(s Spec) []byte {
	if s.QBits == 0 {
		s.QBits = s.Bits
	}
	if s.Sigs == 0 {
		s.Sigs = 1
	}
	var pk bytes.Buffer
	pk.Write([]byte{4, 0x60, 0, 0, 0, s.Algo})
	var q *big.Int
	if s.Algo == 17 {
		q = odd(s.QBits)
		for _, n := range []*big.Int{odd(s.Bits), q, odd(s.Bits - 8), odd(s.Bits - 8)} {
			pk.Write(mpi(n))
		}
	} else {
		pk.Write(mpi(odd(s.Bits)))
		pk.Write(mpi(big.NewInt(65537)))
	}
	h := sha1.New()
	h.Write([]byte{0x99, byte(pk.Len() >> 8), byte(pk.Len())})
	h.Write(pk.Bytes())
	keyID := h.Sum(nil)[12:20]
	raw := append(packet(6, pk.Bytes()), packet(13, []byte("crafted <crafted@evil.example>"))...)
	for range s.Sigs {
		var sig bytes.Buffer
		sig.Write([]byte{4, 0x13, s.Algo, 8, 0, 6, 5, 2, 0x60, 0, 0, 1, 0, 10, 9, 16})
		sig.Write(keyID)
		sig.Write([]byte{0xAB, 0xCD}) // hash tag: not checked for v4
		if s.Algo == 17 {
			sig.Write(mpi(odd(s.QBits - 8)))
			sig.Write(mpi(new(big.Int).Sub(q, big.NewInt(1)))) // s = q-1: always invertible
		} else {
			sig.Write(mpi(odd(s.Bits - 8)))
		}
		raw = append(raw, packet(2, sig.Bytes())...)
	}
	return raw
}

func mpi(n *big.Int) []byte {
	return append([]byte{byte(n.BitLen() >> 8), byte(n.BitLen())}, n.Bytes()...)
}

func packet(tag byte, body []byte) []byte {
	h := []byte{0xC0 | tag, 0xFF, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[2:], uint32(len(body)))
	return append(h, body...)
}

// odd is a random odd number of exactly bits bits.
func odd(bits int) *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
	n.SetBit(n, bits-1, 1)
	return n.SetBit(n, 0, 1)
}
