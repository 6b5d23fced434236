package store

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// The chain of custody, store side. Every import keeps, as blobs, the
// bundle's manifest.json and manifest.json.sig exactly as they came and
// the armored public key of the keyring entry that verified them (roles
// bundle-manifest, bundle-signature, bundle-key), and records them in its
// history entry (ImportEntry.Signature, SignerKey; the manifest is the blob
// named by the bundle digest), with the chain blobs the bundle itself
// carried (ImportEntry.Custody). A bundle exported from the store
// (Carry) carries them onwards, so that each enclave down the line
// checks every hop's signature again and ties every entry to the signed
// manifest of the bundle that brought it (bundle.Hop).
//
// These blobs are small (a manifest is at most bundle.MaxManifestSize, in
// practice a few hundred KiB) and stay as long as their history entry
// does: gc and prune keep them (Index.Blobs).

// custodyBlobs is every import's kept bundle and chain blobs, with their
// roles: Index.Blobs adds them to what gc and prune keep.
func (ix *Index) custodyBlobs() map[verify.Digest]string {
	out := map[verify.Digest]string{}
	for _, e := range ix.Imports {
		if e.Kept() {
			out[e.Bundle] = dist.RoleBundleManifest
			out[e.Signature] = dist.RoleBundleSignature
			out[e.SignerKey] = dist.RoleBundleKey
		}
		for _, d := range e.Custody {
			if _, ok := out[d]; !ok {
				out[d] = "custody"
			}
		}
	}
	return out
}

// signerArmor is the armored public key of the keyring entry whose
// primary key made the bundle's signature (what the store keeps as the
// bundle's key).
func signerArmor(kr openpgp.EntityList, fp string) ([]byte, error) {
	for _, e := range kr {
		if verify.Fingerprint(e) == fp {
			a, err := verify.PublicArmor(e)
			return []byte(a), err
		}
	}
	return nil, fmt.Errorf("the key %s that signed the bundle is not in the keyring", fp)
}

// keepBundle stages the bundle's manifest, signature and signer key as
// blobs (each unless the store has it), to be placed with the bundle's
// blobs at the commit (fsynced by the syncer like them). The custody blobs
// the bundle carries were staged with the rest.
func (imp *importer) keepBundle() error {
	key, err := signerArmor(imp.opt.Keyring, imp.res.Signer.Fingerprint)
	if err != nil {
		return err
	}
	for _, k := range []struct {
		data []byte
		role string
	}{{imp.br.ManifestBytes(), dist.RoleBundleManifest}, {imp.br.SignatureBytes(), dist.RoleBundleSignature}, {key, dist.RoleBundleKey}} {
		b := bundle.Blob{Digest: verify.DigestBytes(k.data), Size: int64(len(k.data)), Role: k.role}
		switch k.role {
		case dist.RoleBundleSignature:
			imp.kept.Signature = b.Digest
		case dist.RoleBundleKey:
			imp.kept.SignerKey = b.Digest
		}
		if haveBlob(imp.root, b) || imp.isStaged(b.Digest) {
			continue
		}
		if _, err := stageBlob(filepath.Join(imp.stageDir, b.Digest.Hex()), bytes.NewReader(k.data), imp.syncer); err != nil {
			return noSpace(imp.root, err, "keeping the bundle's signed manifest", imp.need)
		}
		imp.custody = append(imp.custody, b)
	}
	for _, b := range imp.m.Blobs {
		switch b.Role {
		case dist.RoleBundleManifest, dist.RoleBundleSignature, dist.RoleBundleKey, dist.RoleApproval:
			imp.kept.Custody = append(imp.kept.Custody, b.Digest)
		}
	}
	return nil
}
