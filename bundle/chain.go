package bundle

import (
	"errors"
	"fmt"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Hop is one link of a bundle's chain of custody (Manifest.Chain, format
// 3): a bundle whose content this bundle carries onwards, as the offline
// store on the way imported it.
//
// A store keeps, of every bundle it imports, its manifest.json and
// manifest.json.sig exactly as they came and the public key it checked
// them with (blobs of roles bundle-manifest, bundle-signature and
// bundle-key); 'airgap export --from-store' carries those blobs of every
// bundle that brought what it exports (and of their own chains), so the
// next enclave checks each hop's signature again instead of taking the
// exporting store's word for it, and ties every entry it carries to a hop
// whose signed manifest lists the same bytes (bundle/check's chain check).
type Hop struct {
	// Bundle is the hop's manifest digest, its identity. With Signature
	// set, it is also the blob (role bundle-manifest) holding that
	// manifest.json byte for byte.
	Bundle verify.Digest `json:"bundle"`
	// Signature (role bundle-signature) is the hop's manifest.json.sig as
	// it came; Key (role bundle-key) the armored public key the importing
	// store checked it with. Both empty: the store imported the bundle
	// before airgap kept bundles' manifests, so the hop is recorded (its
	// signer and time as the store noted them) but cannot be checked.
	Signature verify.Digest `json:"signature,omitempty"`
	Key       verify.Digest `json:"key,omitempty"`
	Signer    verify.Signer `json:"signer"`
	// SignedAt is the time the hop's signature says it was made (only for
	// a hop that can be checked; the check compares it).
	SignedAt *time.Time `json:"signed_at,omitempty"`
	// Imported is when the store that took it in imported it.
	Imported time.Time `json:"imported"`
	// Into names the store that imported the hop by the key its exports
	// are signed with (a fingerprint): "" for the store this bundle was
	// exported from, else the signer of other hops of the chain, whose
	// own manifests' chains record this hop (with Into "") — so what an
	// earlier enclave said about its imports is checked against its
	// signed words.
	Into string `json:"into,omitempty"`
	// Approvals are the transfer-station approvals the store that
	// imported the hop accepted of it (as its import policy required),
	// each carried with the station's public key so the next enclave
	// checks it again: that it is the station's signature, of exactly this
	// hop's bundle, made when it says.
	Approvals []HopApproval `json:"approvals,omitempty"`
}

// HopApproval is one station approval of a hop.
type HopApproval struct {
	// Approval is the blob (role approval) of the approval file as the
	// station wrote it; Key the blob (role bundle-key) of the station's
	// armored public key, as the importing store's station keyring had it.
	Approval verify.Digest `json:"approval"`
	Key      verify.Digest `json:"key"`
	Station  verify.Signer `json:"station"`
	Time     time.Time     `json:"time"`
}

// MaxHopApprovals bounds the approvals a hop carries (a store requires at
// most 8, and reads at most 16 beside a bundle), MaxChainApprovals those
// of the whole chain (two per hop on average: each costs a signature
// check); MaxApprovalSize an approval file (bundle/approval's MaxSize).
//
// MaxChainKeys bounds the distinct key blobs (hop signers' and stations'
// keys) a chain names, and MaxChainKeyBytes their sizes in all: each is
// read once per check, whatever the number of hops and approvals that
// name it (a key may hold up to verify.MaxKeysPerKeyring keys and
// verify.MaxKeySignatures self-signatures to check: about 0.3 s for a
// document of RSA-4096 keys, measured). A real chain names a key per
// enclave and per station, each a few KiB.
const (
	MaxHopApprovals   = 16
	MaxChainApprovals = 2 * MaxHops
	MaxApprovalSize   = 64 << 10
	MaxChainKeys      = 64
	MaxChainKeyBytes  = 2 << 20
)

// Checkable reports whether the hop's manifest, signature and key are
// carried (as opposed to recorded only).
func (h Hop) Checkable() bool { return h.Signature != "" }

// Bounds of a chain: MaxHops hops, and at most MaxHopManifests bytes of
// hop manifests in all (each within MaxManifestSize). The check reads one
// hop manifest at a time and keeps, beside what this bundle's own
// manifest needs, a mark per hop (its memory does not grow with the
// hops' manifests); the total bounds its time (parsing and hashing half
// a GiB of JSON takes seconds) and what a bundle of compressible hop
// manifests can make it cost. An export from a store carries only the
// hops needed to tie what it carries (each import that first brought a
// record), so a site's imports over years (a delta's manifest lists the
// whole catalog: a few hundred KiB to a few MiB) stay inside both.
const (
	MaxHops         = 4096
	MaxHopManifests = 512 << 20
)

// maxIdentity bounds a recorded signer identity (OpenPGP user IDs are
// short; a key's limits bound real ones far below this).
const maxIdentity = 4096

// validateChain checks the form of the chain (format 3): at most MaxHops
// hops, sorted by bundle, none twice; a checkable hop names its three
// blobs with their roles and its signature time; a recorded one names no
// blob; signers in canonical form; every Into the signer of a hop of the
// chain; and no gates of the bundle's own (an export from a store runs
// none: its entries carry the results of the exports that ran them).
func (m *Manifest) validateChain(roles map[verify.Digest]string) error {
	if len(m.Chain) == 0 {
		return nil
	}
	if len(m.Chain) > MaxHops {
		return fmt.Errorf("a chain of %d hops, over the limit of %d", len(m.Chain), MaxHops)
	}
	if len(m.Gates) > 0 {
		return errors.New("a bundle exported from a store lists gates of its own; it runs none (its entries carry the results of the exports that ran them)")
	}
	signers := map[string]bool{}
	approvals := 0
	for i := range m.Chain {
		h := &m.Chain[i]
		if approvals += len(h.Approvals); approvals > MaxChainApprovals {
			return fmt.Errorf("the chain's hops carry over %d station approvals in all", MaxChainApprovals)
		}
		if err := h.validate(roles); err != nil {
			return fmt.Errorf("chain hop %s: %v", h.Bundle.Short(), err)
		}
		if i > 0 && m.Chain[i-1].Bundle >= h.Bundle {
			return fmt.Errorf("chain hops are not sorted by bundle, or one is listed twice (%s)", h.Bundle.Short())
		}
		signers[h.Signer.Fingerprint] = true
	}
	for _, h := range m.Chain {
		if h.Into != "" && !signers[h.Into] {
			return fmt.Errorf("chain hop %s: it came into the store whose exports %s signs, which signed no hop of the chain", h.Bundle.Short(), dist.Printable(h.Into))
		}
	}
	return nil
}

// validate checks one hop's form.
func (h *Hop) validate(roles map[verify.Digest]string) error {
	if _, err := verify.ParseDigest(string(h.Bundle)); err != nil {
		return err
	}
	s := h.Signer
	if fp, err := verify.ParseFingerprint(s.Fingerprint); err != nil || fp != s.Fingerprint {
		return fmt.Errorf("signer fingerprint %q is not in canonical form", dist.Printable(s.Fingerprint))
	}
	if len(s.KeyID) > 64 || dist.Printable(s.KeyID) != s.KeyID || len(s.Identity) > maxIdentity || dist.Printable(s.Identity) != s.Identity {
		return errors.New("its signer's key ID or identity is not printable text of a sensible length")
	}
	if h.Imported.IsZero() {
		return errors.New("no import time")
	}
	if h.Into == s.Fingerprint {
		return errors.New("it came into the store of the enclave that signed it")
	}
	if !h.Checkable() {
		if h.Key != "" || h.SignedAt != nil || roles[h.Bundle] != "" || len(h.Approvals) > 0 {
			return errors.New("a recorded hop (no signature) names a key, a signature time, a manifest blob or approvals")
		}
		return nil
	}
	if len(h.Approvals) > MaxHopApprovals {
		return fmt.Errorf("%d approvals, over the limit of %d", len(h.Approvals), MaxHopApprovals)
	}
	seen := map[verify.Digest]bool{}
	for _, a := range h.Approvals {
		if seen[a.Approval] {
			return fmt.Errorf("approval %s is listed twice", a.Approval.Short())
		}
		seen[a.Approval] = true
		for _, b := range []struct {
			d    verify.Digest
			role string
		}{{a.Approval, dist.RoleApproval}, {a.Key, dist.RoleBundleKey}} {
			if _, err := verify.ParseDigest(string(b.d)); err != nil {
				return err
			}
			if roles[b.d] != b.role {
				return fmt.Errorf("approval blob %s is not listed with role %q", b.d.Short(), b.role)
			}
		}
		if fp, err := verify.ParseFingerprint(a.Station.Fingerprint); err != nil || fp != a.Station.Fingerprint || dist.Printable(a.Station.Identity) != a.Station.Identity || len(a.Station.Identity) > maxIdentity {
			return errors.New("an approval's station is not a fingerprint in canonical form and a printable identity")
		}
	}
	if h.SignedAt == nil {
		return errors.New("no signature time")
	}
	for _, b := range []struct {
		d    verify.Digest
		role string
	}{{h.Bundle, dist.RoleBundleManifest}, {h.Signature, dist.RoleBundleSignature}, {h.Key, dist.RoleBundleKey}} {
		if _, err := verify.ParseDigest(string(b.d)); err != nil {
			return err
		}
		if roles[b.d] != b.role {
			return fmt.Errorf("blob %s is not listed with role %q", b.d.Short(), b.role)
		}
	}
	return nil
}

// chainBlobs is every blob the chain refers to, with its role.
func chainBlobs(chain []Hop) map[verify.Digest]string {
	out := map[verify.Digest]string{}
	for _, h := range chain {
		if h.Checkable() {
			out[h.Bundle] = dist.RoleBundleManifest
			out[h.Signature] = dist.RoleBundleSignature
			out[h.Key] = dist.RoleBundleKey
		}
		for _, a := range h.Approvals {
			out[a.Approval] = dist.RoleApproval
			out[a.Key] = dist.RoleBundleKey
		}
	}
	return out
}

// describeChainBlob says what d is in the chain, or "".
func describeChainBlob(chain []Hop, d verify.Digest) string {
	for _, h := range chain {
		switch {
		case !h.Checkable():
		case d == h.Bundle:
			return "the manifest of chain hop " + h.Bundle.Short()
		case d == h.Signature:
			return "the signature of chain hop " + h.Bundle.Short()
		case d == h.Key:
			return "the key that signed chain hop " + h.Bundle.Short()
		}
		for _, a := range h.Approvals {
			switch d {
			case a.Approval:
				return "a station approval of chain hop " + h.Bundle.Short()
			case a.Key:
				return "the station key of an approval of chain hop " + h.Bundle.Short()
			}
		}
	}
	return ""
}
