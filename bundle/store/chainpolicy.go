package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/hashicorp/hcl/v2"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// chainHCL is import.hcl's chain block:
//
//	chain {
//	  keyring = "upstream.pub.asc"   # a path relative to the store, or absolute
//	}
type chainHCL struct {
	Keyring  string    `hcl:"keyring"`
	DefRange hcl.Range `hcl:",def_range"`
}

// ruleChain: a hop of the bundle's chain of custody is not trusted (the
// bundle as a whole).
const ruleChain = "chain"

// ChainPolicy is the store's chain block (import.hcl): every hop of a
// bundle's chain of custody (bundle.Hop: the bundles whose content an
// export from an offline store carries onwards) must be signed by a key of
// its keyring. The bundle's own signature is --keyring's to judge; the
// chain keyring says whose hands the content may have passed through
// before. For each hop it demands:
//
//   - that the hop can be checked: a hop recorded without its manifest (a
//     store that imported it before airgap kept manifests) is refused, and
//     with it whatever it may have brought;
//   - its signer's fingerprint in the keyring, and (at an import, which has
//     the hop's blobs) its signature over its manifest good with the
//     keyring's copy of that key (judged at the signature's creation; a
//     revocation the keyring's copy carries counts, even when the copy the
//     bundle carried lacks it).
//
// The bundle check (check.Checker) has already checked every hop against
// the key it came with, what earlier hops recorded, and that every entry
// is tied to a hop's signed manifest. A bundle from the registries has no
// chain: the policy has nothing to refuse in it. 'airgap inventory --json'
// carries the policy with the keyring's public keys, so that 'airgap
// verify --against' forecasts it (by fingerprint: a forecast has not the
// hops' blobs at hand once the check is done).
type ChainPolicy struct {
	Keyring string          `json:"keyring"` // as import.hcl names it
	Keys    []verify.Signer `json:"keys"`
	Armor   string          `json:"armor"`
	keyring openpgp.EntityList
}

// newChainPolicy is the chain block of keyring kr (public keys only).
func newChainPolicy(name string, kr openpgp.EntityList) (*ChainPolicy, error) {
	cp := &ChainPolicy{Keyring: name, Keys: []verify.Signer{}, keyring: kr}
	var armor bytes.Buffer
	for _, e := range kr {
		if e.PrivateKey != nil {
			return nil, fmt.Errorf("the chain keyring %s holds a private key: it takes public keys only", name)
		}
		cp.Keys = append(cp.Keys, verify.Signer{KeyID: verify.KeyID(e), Fingerprint: verify.Fingerprint(e), Identity: verify.Identity(e)})
		if err := verify.ArmorPublic(&armor, e); err != nil {
			return nil, err
		}
	}
	if len(kr) == 0 {
		return nil, errors.New("the chain keyring holds no key")
	}
	cp.Armor = armor.String()
	return cp, nil
}

// ChainKeyring is the chain block's keyring (nil: the store has none).
func (sp *StorePolicy) ChainKeyring() openpgp.EntityList {
	if sp == nil || sp.Chain == nil {
		return nil
	}
	return sp.Chain.keyring
}

// Check implements Policy: a hop it does not trust refuses the bundle.
func (cp *ChainPolicy) Check(in *PolicyInput, out *PolicyResult) error {
	if in.Checked == nil {
		return nil
	}
	hops := in.Checked.Chain
	top := 0
	for _, h := range hops {
		top = max(top, h.Level)
	}
	for _, h := range hops {
		who := h.Signer.Identity
		if who == "" {
			who = "key " + h.Signer.KeyID
		}
		where := fmt.Sprintf("hop %d of %d, bundle %s signed by %s (fingerprint %s)", top-h.Level+1, top+1, h.Bundle.Short(),
			dist.Printable(who), verify.GroupFingerprint(h.Signer.Fingerprint))
		if !h.Checkable() {
			err := fmt.Errorf("%w: %s: the store it passed through did not keep its signed manifest, so its signature cannot be checked, nor what came with it\nhint: this store's chain policy (%s) accepts only hops it can check; have that store import the bundle again (it then keeps its manifest) and export again",
				ErrChainUntrusted, where, ImportConfigName)
			out.Refuse(err, Refusal{Rule: ruleChain, Reason: "hop " + h.Bundle.Short() + " cannot be checked"})
			return nil
		}
		if err := cp.checkHop(in, h); err != nil {
			why := err.Error()
			hint := fmt.Sprintf("if that key belongs to a network this one takes content from, check its fingerprint with its owner and add its public key to %s (the chain keyring of %s); otherwise do not import this bundle", cp.Keyring, ImportConfigName)
			if strings.Contains(why, verify.ErrKeyRevoked.Error()) {
				hint = fmt.Sprintf("the chain keyring %s holds that key revoked, and a revoked key signs nothing: bring the content through hops signed by keys that are not revoked", cp.Keyring)
			}
			err = fmt.Errorf("%w: %s: %v\nhint: %s", ErrChainUntrusted, where, err, hint)
			out.Refuse(err, Refusal{Rule: ruleChain, Reason: "hop " + h.Bundle.Short() + " signed by " + keyName(h.Signer) + " is not trusted: " + firstLine(why)})
			return nil
		}
	}
	return nil
}

// checkHop checks one hop's signer against the chain keyring and, where
// the hop's blobs are at hand (an import), its signature with the
// keyring's copy of the key.
func (cp *ChainPolicy) checkHop(in *PolicyInput, h check.HopCheck) error {
	var key openpgp.EntityList
	for _, e := range cp.keyring {
		if verify.Fingerprint(e) == h.Signer.Fingerprint {
			key = openpgp.EntityList{e}
		}
	}
	if key == nil {
		return fmt.Errorf("that key is not in the chain keyring %s", cp.Keyring)
	}
	if in.BlobPath == nil {
		// A forecast: the check tied the hop to the key it came with and,
		// given the keyring (report.CheckFor), checked it with the
		// keyring's copy too.
		if h.KeyringChecked && h.KeyringErr != "" {
			return fmt.Errorf("its signature does not verify with the chain keyring's copy of that key: %s", h.KeyringErr)
		}
		return nil
	}
	data, err := in.readBlob(h.Bundle, bundle.MaxManifestSize)
	if err != nil {
		return err
	}
	sig, err := in.readBlob(h.Signature, bundle.MaxSignatureSize)
	if err != nil {
		return err
	}
	if _, err := verify.CheckSignature(key, bytes.NewReader(data), sig); err != nil {
		return fmt.Errorf("its signature does not verify with the chain keyring's copy of that key: %v", err)
	}
	return nil
}

// readBlob reads a blob of the bundle being imported (staged, or already
// in the store), verified, within limit.
func (in *PolicyInput) readBlob(d verify.Digest, limit int64) ([]byte, error) {
	path, ok := in.BlobPath(d)
	if !ok {
		return nil, fmt.Errorf("blob %s is not at hand", d.Short())
	}
	b, err := readFileVerified(path, d, limit)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %v", d.Short(), strings.TrimSpace(err.Error()))
	}
	return b, nil
}
