package verify_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/airgap/airgap/verify"
)

// TestKeyringMergesCopies: a keyring that holds a key and a copy of it
// carrying its revocation, in either order, is one revoked key (as GnuPG
// merges them): a signature by it is refused, and Revocations lists it.
// Before, the first copy that verified won, so the revocation appended
// after the key was ignored.
func TestKeyringMergesCopies(t *testing.T) {
	k := key(t, nil)
	plain, err := verify.PublicArmor(k)
	if err != nil {
		t.Fatal(err)
	}
	msg := "a message"
	sig := signAt(t, k, msg, k.PrimaryKey.CreationTime.Add(1e9))
	if err := k.RevokeKey(packet.KeyCompromised, "lost", nil); err != nil {
		t.Fatal(err)
	}
	revoked, err := verify.PublicArmor(k)
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"key then revocation": plain + revoked, "revocation then key": revoked + plain} {
		kr, err := verify.ReadKeyring(strings.NewReader(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(kr) != 1 {
			t.Errorf("%s: %d keys, want the one key merged", name, len(kr))
		}
		if _, err := verify.CheckDetached(kr, strings.NewReader(msg), sig); !errors.Is(err, verify.ErrKeyRevoked) {
			t.Errorf("%s: a signature by the revoked key: %v", name, err)
		}
		if rs := verify.Revocations(kr); len(rs) != 1 || rs[0].Signer.Fingerprint != verify.Fingerprint(k) {
			t.Errorf("%s: revocations %v", name, rs)
		}
	}
}

// TestKeyringMergeManyCopies: the most copies of one key a keyring may
// hold (MaxKeysPerKeyring), half of them revoked, merge into one revoked
// key with its revocation once, in time linear in the copies.
func TestKeyringMergeManyCopies(t *testing.T) {
	k := key(t, nil)
	plain, err := verify.PublicArmor(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.RevokeKey(packet.KeyCompromised, "lost", nil); err != nil {
		t.Fatal(err)
	}
	revoked, err := verify.PublicArmor(k)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Repeat(plain+revoked, verify.MaxKeysPerKeyring/2)
	start := time.Now()
	kr, err := verify.ReadKeyring(strings.NewReader(doc))
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(kr) != 1 || len(kr[0].Revocations) != 1 {
		t.Errorf("%d keys, %d revocations: want one key, revoked once", len(kr), len(kr[0].Revocations))
	}
	t.Logf("%d copies read and merged in %s", verify.MaxKeysPerKeyring, el)
	if el > 2*time.Second {
		t.Errorf("took %s", el)
	}
}
