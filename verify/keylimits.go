package verify

import (
	"bytes"
	//lint:ignore SA1019 DSA publisher keys are still accepted by Terraform; only their size is checked here
	"crypto/dsa"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Limits on what ReadKeyring accepts. Keys come from registries (a download
// document's signing_keys), from bundles (the publisher keys the offline side
// re-checks) and from --keyring files: all untrusted. Reading a key verifies
// its self-signatures, and the cost of that grows with the key's parameters
// (a DSA key with 65535-bit p and q costs minutes of CPU per signature, in a
// computation nothing can interrupt), so the sizes are checked first, on the
// packets alone, before any signature is verified.
//
// Worst case accepted: MaxKeyringSize bytes holding at most MaxKeysPerKeyring
// primary keys and MaxKeySignatures signature packets, each checked against
// an RSA key of MaxRSABits or a DSA key of MaxDSABits/MaxDSAQBits. One such
// check costs about 2.5 ms (DSA 3072/256; RSA 8192 is cheaper), so a document
// costs well under a second (TestReadKeyringWorstAcceptedCost measures it).
const (
	// MaxKeyringSize bounds one keyring document, armored or binary. Real
	// publisher keys are a few KiB; HashiCorp's, with its subkeys, ~4 KiB.
	MaxKeyringSize = 1 << 20
	// MaxKeysPerKeyring bounds the primary keys in one document.
	MaxKeysPerKeyring = 32
	// MaxKeySignatures bounds the signature packets in one document (self-
	// signatures, bindings, revocations, certifications by others).
	MaxKeySignatures = 256
	// MinRSABits and MaxRSABits bound RSA keys: below 2048 bits a key no
	// longer vouches for anything (Terraform would still accept it: airgap
	// is stricter), above 8192 no publisher uses one.
	MinRSABits = 2048
	MaxRSABits = 8192
	// MaxDSABits bounds DSA's p and MaxDSAQBits its q: the largest FIPS
	// 186-4 sizes (3072/256). Terraform accepts DSA publisher keys, so
	// airgap does too, up to these sizes.
	MaxDSABits  = 3072
	MaxDSAQBits = 256
	// MaxElGamalBits bounds ElGamal (encryption) subkeys, which old
	// DSA keys carry; they are never used to check anything.
	MaxElGamalBits = 4096
)

// checkKeyPackets reads the packets of one binary keyring document and
// refuses it if a key is outside the limits above, or if the document holds
// too many keys or signatures; keys and sigs carry the counts across the
// documents of one ReadKeyring call. Parsing a packet verifies nothing, so
// this costs time linear in the size of the input. Packets that do not parse
// are left for openpgp.ReadKeyRing to report or skip.
func checkKeyPackets(bin []byte, keys, sigs *int) error {
	br := bytes.NewReader(bin)
	pr := packet.NewReader(br)
	for {
		before := br.Len()
		p, err := pr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if br.Len() < before {
				continue // a malformed packet was consumed: look at the rest
			}
			return nil // no progress: ReadKeyRing cannot read past it either
		}
		switch p := p.(type) {
		case *packet.PublicKey:
			if err := checkPublicKey(p, keys); err != nil {
				return err
			}
		case *packet.PrivateKey:
			if err := checkPublicKey(&p.PublicKey, keys); err != nil {
				return err
			}
		case *packet.Signature:
			if *sigs++; *sigs > MaxKeySignatures {
				return fmt.Errorf("%w: more than %d signatures", ErrKeyRefused, MaxKeySignatures)
			}
		}
	}
}

func checkPublicKey(pk *packet.PublicKey, keys *int) error {
	if !pk.IsSubkey {
		if *keys++; *keys > MaxKeysPerKeyring {
			return fmt.Errorf("%w: more than %d keys", ErrKeyRefused, MaxKeysPerKeyring)
		}
	}
	what := fmt.Sprintf("key %016X", pk.KeyId)
	if pk.IsSubkey {
		what = "sub" + what
	}
	bits, err := pk.BitLength()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrKeyRefused, what, err)
	}
	switch pk.PubKeyAlgo {
	case packet.PubKeyAlgoRSA, packet.PubKeyAlgoRSAEncryptOnly, packet.PubKeyAlgoRSASignOnly:
		if bits < MinRSABits || bits > MaxRSABits {
			return fmt.Errorf("%w: %s: RSA with %d bits (%d to %d accepted)", ErrKeyRefused, what, bits, MinRSABits, MaxRSABits)
		}
	case packet.PubKeyAlgoDSA:
		q := 0
		if k, ok := pk.PublicKey.(*dsa.PublicKey); ok && k.Q != nil {
			q = k.Q.BitLen()
		}
		if bits > MaxDSABits || q > MaxDSAQBits {
			return fmt.Errorf("%w: %s: DSA with %d-bit p and %d-bit q (at most %d and %d accepted)", ErrKeyRefused, what, bits, q, MaxDSABits, MaxDSAQBits)
		}
	case packet.PubKeyAlgoElGamal:
		if bits > MaxElGamalBits {
			return fmt.Errorf("%w: %s: ElGamal with %d bits (at most %d accepted)", ErrKeyRefused, what, bits, MaxElGamalBits)
		}
	}
	return nil
}
