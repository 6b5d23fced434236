package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// ChainConfig is import.hcl's chain block:
//
//	chain {
//	  keyring = "upstream.pub.asc"   # a path relative to the store, or absolute
//	}
type ChainConfig struct {
	Keyring string `hcl:"keyring"`
}

// ChainPolicy is the import policy of import.hcl's chain block: every hop
// of a bundle's chain of custody (bundle.Hop: the bundles whose content an
// export from an offline store carries onwards) must be signed by a key
// of Keyring. The bundle's own signature is --keyring's to judge; the
// chain keyring says whose hands the content may have passed through
// before. For each hop it demands:
//
//   - that the hop can be checked: a hop recorded without its manifest (a
//     store that imported it before airgap kept manifests) is refused, and
//     with it whatever it may have brought;
//   - its signer's fingerprint in Keyring, and its signature over its
//     manifest good with Keyring's copy of that key (judged at the
//     signature's creation; a revocation Keyring's copy carries counts,
//     even when the copy the bundle carried lacks it).
//
// The bundle check (bundle.Checker) has already checked every hop against
// the key it came with, what earlier hops recorded, and that every entry
// is tied to a hop's signed manifest. A bundle from the registries has no
// chain: the policy has nothing to refuse in it.
type ChainPolicy struct {
	Keyring openpgp.EntityList
	Path    string // the keyring file, for messages
}

// ReadChainPolicy reads root's import.hcl chain block and its keyring
// (public keys only), or returns nil when there is none.
func ReadChainPolicy(root string) (*ChainPolicy, error) {
	cfg, path, err := readImportConfig(root)
	if err != nil || cfg.Chain == nil {
		return nil, err
	}
	kp := cfg.Chain.Keyring
	if kp == "" {
		return nil, fmt.Errorf("%s: chain: keyring is empty\nhint: name the file of public keys whose bundles the content may have come through (relative to the store)\nthe store was not changed", path)
	}
	if !filepath.IsAbs(kp) {
		kp = filepath.Join(root, kp)
	}
	kr, err := verify.ReadKeyringFile(kp)
	if err != nil {
		return nil, fmt.Errorf("%s: chain: %w\nthe store was not changed", path, err)
	}
	return &ChainPolicy{Keyring: kr, Path: kp}, nil
}

// Check implements Policy.
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
		if !h.Checkable() || !h.Checked {
			return fmt.Errorf("%w: %s: the store it passed through did not keep its signed manifest, so its signature cannot be checked, nor what came with it\nhint: this store's chain policy (%s) accepts only hops it can check; have that store import the bundle again (it then keeps its manifest) and export again",
				ErrChainUntrusted, where, ImportConfigName)
		}
		if err := cp.checkHop(in, h); err != nil {
			return fmt.Errorf("%w: %s: %v\nhint: if that key belongs to a network this one takes content from, check its fingerprint with its owner and add its public key to %s (the chain keyring of %s); otherwise do not import this bundle",
				ErrChainUntrusted, where, err, cp.Path, ImportConfigName)
		}
	}
	return nil
}

// checkHop checks one hop's signature with the chain keyring's key.
func (cp *ChainPolicy) checkHop(in *PolicyInput, h bundle.HopCheck) error {
	var key openpgp.EntityList
	for _, e := range cp.Keyring {
		if verify.Fingerprint(e) == h.Signer.Fingerprint {
			key = openpgp.EntityList{e}
		}
	}
	if key == nil {
		return fmt.Errorf("that key is not in the chain keyring %s", cp.Path)
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
	path, ok := "", false
	if in.BlobPath != nil {
		path, ok = in.BlobPath(d)
	}
	if !ok {
		return nil, fmt.Errorf("blob %s is not at hand", d.Short())
	}
	b, err := readFileVerified(path, d, limit)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %v", d.Short(), strings.TrimSpace(err.Error()))
	}
	return b, nil
}
