package verify_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/verify"
	"github.com/airgap/airgap/verify/verifytest"
)

// TestReadKeyringRefusesCostlyKeys: keys whose self-signatures would cost
// seconds to minutes of CPU to check (huge DSA parameters), RSA keys outside
// 2048..8192 bits, and documents with too many keys, signatures or bytes are
// refused from their packets alone, before any signature is checked.
func TestReadKeyringRefusesCostlyKeys(t *testing.T) {
	many := func(n int, s verifytest.Spec) []verifytest.Spec {
		out := make([]verifytest.Spec, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	cases := []struct {
		name, key, want string
	}{
		{"DSA 65535-bit p and q", verifytest.HugeDSA(65535), "DSA with 65535-bit p and 65535-bit q"},
		{"DSA 16384-bit", verifytest.HugeDSA(16384), "DSA with 16384-bit p"},
		{"DSA 3072-bit p, 3072-bit q", verifytest.Armored(verifytest.Spec{Algo: 17, Bits: 3072, QBits: 3072}), "3072-bit q"},
		{"RSA 1024", verifytest.Armored(verifytest.Spec{Algo: 1, Bits: 1024}), "RSA with 1024 bits"},
		{"RSA 16384", verifytest.Armored(verifytest.Spec{Algo: 1, Bits: 16384}), "RSA with 16384 bits"},
		{"33 keys", verifytest.Armored(many(verify.MaxKeysPerKeyring+1, verifytest.Spec{Algo: 1, Bits: 2048})...), "more than 32 keys"},
		{"257 signatures", verifytest.Armored(verifytest.Spec{Algo: 1, Bits: 2048, Sigs: verify.MaxKeySignatures + 1}), "more than 256 signatures"},
		{"a huge key in a second block", verifytest.Armored(verifytest.Spec{Algo: 1, Bits: 2048}) + verifytest.HugeDSA(8192), "DSA with 8192-bit p"},
		{"over 1 MiB", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n" + strings.Repeat("A", verify.MaxKeyringSize), "larger than 1024 KiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := verify.ReadKeyring(strings.NewReader(tc.key))
			if el := time.Since(start); el > 500*time.Millisecond {
				t.Errorf("refusing took %s", el)
			}
			if !errors.Is(err, verify.ErrKeyRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrKeyRefused saying %q", err, tc.want)
			}
		})
	}
	// A binary document is checked the same way.
	if _, err := verify.ReadKeyring(bytes.NewReader(verifytest.Key(verifytest.Spec{Algo: 17, Bits: 4096, QBits: 256}))); !errors.Is(err, verify.ErrKeyRefused) {
		t.Errorf("binary DSA 4096: err = %v", err)
	}
}

// TestReadKeyringWorstAcceptedCost: the costliest documents within the
// limits — 32 keys of the largest DSA (3072/256) or RSA (8192) size with 256
// full-size self-signatures between them — are read (and fail their bogus
// self-signatures) in well under the time a user would notice.
func TestReadKeyringWorstAcceptedCost(t *testing.T) {
	for _, s := range []verifytest.Spec{{Algo: 17, Bits: 3072, QBits: 256, Sigs: 8}, {Algo: 1, Bits: 8192, Sigs: 8}} {
		specs := make([]verifytest.Spec, verify.MaxKeysPerKeyring)
		for i := range specs {
			specs[i] = s
		}
		key := verifytest.Armored(specs...)
		start := time.Now()
		_, err := verify.ReadKeyring(strings.NewReader(key))
		el := time.Since(start)
		t.Logf("algo %d, %d bits, %d keys × %d signatures, %d KiB: %s (%v)", s.Algo, s.Bits, len(specs), s.Sigs, len(key)>>10, el.Round(time.Millisecond), err)
		if errors.Is(err, verify.ErrKeyRefused) || err == nil {
			t.Errorf("err = %v, want the bogus self-signatures to fail", err)
		}
		if el > 2*time.Second {
			t.Errorf("took %s", el)
		}
	}
	// Real keys within the limits are read.
	pub, err := verify.PublicArmor(key(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	pub2, err := verify.PublicArmor(key(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if el, err := verify.ReadKeyring(strings.NewReader(pub + pub2)); err != nil || len(el) != 2 {
		t.Errorf("two RSA 2048 keys: %v, %v", el, err)
	}
}
