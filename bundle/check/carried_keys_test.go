package check_test

// Finding C of the bundle review (issue 11): the keys a bundle carries for a
// provider are parsed on the offline side with unbounded DSA parameters.
// The bound lives in verify (another branch); until it is merged this test
// fails.

import (
	"bytes"
	//lint:ignore SA1019 publisher keys may be DSA (Terraform accepts them); the test builds one to check the size bound on them
	"crypto/dsa"
	"math/big"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// hostileDSAKeys returns n DSA public keys with bits-bit parameters (no
// primes needed) whose user-ID self-signature is garbage, then good's key,
// in one armored block. go-crypto verifies every self-signature while
// parsing, skips a key whose self-signature fails (StructuralError) and goes
// on to the next.
func hostileDSAKeys(t *testing.T, n, bits int, good *openpgp.Entity) string {
	t.Helper()
	var raw bytes.Buffer
	for i := range n {
		p := new(big.Int).Lsh(big.NewInt(1), uint(bits))
		p.Sub(p, big.NewInt(int64(2*i+1))) // odd: Montgomery, the fast case
		q := new(big.Int).Lsh(big.NewInt(1), uint(bits-8))
		q.Sub(q, big.NewInt(1))
		pk := packet.NewDSAPublicKey(time.Unix(1, 0), &dsa.PublicKey{Parameters: dsa.Parameters{P: p, Q: q, G: big.NewInt(3)}, Y: big.NewInt(5)})
		if err := pk.Serialize(&raw); err != nil {
			t.Fatal(err)
		}
		if err := packet.NewUserId("x", "", "").Serialize(&raw); err != nil {
			t.Fatal(err)
		}
		// v4 positive certification, DSA, SHA-256; hashed: creation time,
		// issuer; r = 1, s = 2.
		body := []byte{4, 0x13, 17, 8, 0, 16, 5, 2, 0, 0, 0, 1, 9, 16}
		for s := 56; s >= 0; s -= 8 {
			body = append(body, byte(pk.KeyId>>s))
		}
		body = append(body, 0, 0, 0, 0, 0, 1, 1, 0, 2, 2)
		raw.Write(append([]byte{0xC2, byte(len(body))}, body...))
	}
	if err := good.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	aw, _ := armor.Encode(&out, openpgp.PublicKeyType, nil)
	aw.Write(raw.Bytes())
	aw.Close()
	return out.String()
}

// TestAttackHugeDSAKeyCPU (FAILING, finding C): a key the bundle carries for
// a provider is parsed on the offline side (verify, import, inventory) with
// unbounded DSA parameters. Each carried DSA key with 16384-bit parameters
// costs ~1–2 s of CPU to parse (its self-signature is verified); parameters
// may reach 65535 bits (~64× that), bad keys are skipped silently, and one
// armored key may be 16 MiB, so one manifest entry holds hundreds of them:
// hours of CPU at the transfer station. With a good key after the hostile
// ones the keyring parses without error (1 usable key), so the import
// succeeds, the index keeps the whole armor, and every 'airgap inventory'
// parses it again for each provider version that carries it (KeyNote).
func TestAttackHugeDSAKeyCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("measures seconds of CPU")
	}
	pub := bundletest.Key(t, "publisher")
	const n, bits = 3, 16384
	armored := hostileDSAKeys(t, n, bits, pub)
	pv := dist.ProviderVersion{SigningKeys: []dist.SigningKey{{KeyID: verify.KeyID(pub), ASCIIArmor: armored}}}
	start := time.Now()
	kr, err := check.ProviderKeyring(pv)
	took := time.Since(start)
	t.Logf("%d carried DSA keys of %d bits (%d bytes armored): parsed in %v, %d usable key(s), err %v", n, bits, len(armored), took, len(kr), err)
	if took > time.Second {
		t.Errorf("parsing %d bytes of carried keys took %v: DSA parameter sizes are not bounded on the offline side", len(armored), took)
	}
}
