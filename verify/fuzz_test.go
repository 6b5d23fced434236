package verify_test

import (
	"bytes"
	"testing"

	"github.com/airgap/airgap/verify"
	"github.com/airgap/airgap/verify/verifytest"
)

// FuzzReadKeyring: any key document, armored or binary, is read or refused
// without a panic, and a refusal happens before any signature is checked.
func FuzzReadKeyring(f *testing.F) {
	pub, err := verify.PublicArmor(key(&testing.T{}, nil))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(pub))
	f.Add(verifytest.Key(verifytest.Spec{Algo: 17, Bits: 1024, QBits: 160, Sigs: 2}))
	f.Add(verifytest.Key(verifytest.Spec{Algo: 1, Bits: 2048}))
	f.Add([]byte(verifytest.HugeDSA(4096)))
	f.Fuzz(func(t *testing.T, b []byte) {
		el, err := verify.ReadKeyring(bytes.NewReader(b))
		if err == nil && len(el) == 0 {
			t.Error("no error and no keys")
		}
	})
}
