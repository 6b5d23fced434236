package check

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// provider checks one provider version's SHA256SUMS signature and lines.
func (c *Checker) provider(p dist.ProviderVersion) error {
	entry := "provider " + p.String()
	sumsPath, ok1 := c.have(p.Shasums)
	sigPath, ok2 := c.have(p.ShasumsSig)
	if !ok1 || !ok2 {
		c.rep.Deferred = append(c.rep.Deferred, "SHA256SUMS and signature of "+entry)
		return nil
	}
	sums, err := readLimited(sumsPath, dist.MaxShasumsSize)
	if err != nil {
		return fmt.Errorf("%s: reading its SHA256SUMS: %w", entry, err)
	}
	sig, err := readLimited(sigPath, bundle.MaxSignatureSize)
	if err != nil {
		return fmt.Errorf("%s: reading its SHA256SUMS signature: %w", entry, err)
	}
	checked, err := c.checkProviderSignature(p, sums, sig)
	if errors.Is(err, verify.ErrKeyRevoked) {
		// Not a bundle that contradicts itself: the publisher revoked the
		// key, and the registry lists the key with its revocation.
		return fmt.Errorf("%s: its SHA256SUMS is %w: the keys the bundle carries for it hold the key's revocation (%v)\n"+
			"hint: the publisher revoked the key that signed this version; do not import it. On the connected side, export a version signed by a key the publisher has not revoked (the registry lists its keys), or ask the publisher which versions to use",
			entry, bundle.ErrRevokedPublisherKey, errors.Unwrap(err))
	}
	if err != nil {
		return inconsistent(entry, "%v", err)
	}
	if err := checkSumsTime(entry, checked.Created, c.opt.SignedAt, c.opt.Now, c.m.Created != nil); err != nil {
		return err
	}
	c.rep.Signatures++
	c.rep.Signed = append(c.rep.Signed, facts(p, checked, c.opt.Now))
	lines, _, err := dist.ParseShasums(bytes.NewReader(sums))
	if err != nil {
		return inconsistent(entry, "its SHA256SUMS is unreadable: %v", err)
	}
	listed := make(map[string]string, len(lines))
	for _, l := range lines {
		if prev, ok := listed[l.Filename]; ok && prev != l.Hex {
			return inconsistent(entry, "its SHA256SUMS lists %s twice, with different hashes", l.Filename)
		}
		listed[l.Filename] = l.Hex
	}
	if p.MirrorHashesOnly && len(listed) != len(p.Packages) {
		// The site wrote this SHA256SUMS of what it carried: a line for a
		// package it did not carry would vouch for bytes nobody hashed.
		return inconsistent(entry, "marked as carrying mirror hashes only, but its SHA256SUMS lists %d files for %d packages", len(listed), len(p.Packages))
	}
	for _, pk := range p.Packages {
		// The name every registry gives this package (Manifest has
		// required pk.Filename to be it): the signed line must be for this
		// type, version and platform.
		name := dist.ProviderPackageName(p.Type, p.Version, pk.OS, pk.Arch)
		h, ok := listed[name]
		switch {
		case !ok:
			return inconsistent(entry+" "+pk.Platform(), "the package %s is not listed in its signed SHA256SUMS", name)
		case h != pk.Digest.Hex():
			return inconsistent(entry+" "+pk.Platform(), "the package %s has sha256 %s, but its signed SHA256SUMS says %s", pk.Filename, pk.Digest.Hex(), h)
		}
		c.rep.Packages++
		if p.MirrorHashesOnly {
			c.rep.MirrorHashesOnly++
		}
	}
	return nil
}

// facts is what p's checked signature says, for the report.
func facts(p dist.ProviderVersion, c verify.Checked, now time.Time) SignatureFacts {
	f := SignatureFacts{Provider: p.Key(), Namespace: p.NamespaceKey(), Trust: Trust(p), Signer: c.Signer, Created: c.Created.UTC()}
	if !c.KeyExpires.IsZero() {
		e := c.KeyExpires.UTC()
		f.KeyExpires, f.KeyExpiredSince = &e, c.ExpiredSince(now)
	}
	return f
}

// declarations checks that every publisher key the manifest declares new
// is needed by a provider the bundle carries: one of its namespace whose
// SHA256SUMS that key signed. A declaration whose namespace has providers
// whose signatures are not checked here (a delta's omitted SHA256SUMS) is
// left for import.
func (c *Checker) declarations() error {
	if len(c.m.PublisherKeys) == 0 {
		return nil
	}
	signs := map[string]bool{}    // namespace + " " + fingerprint of a checked provider
	deferred := map[string]bool{} // namespaces with a provider not checked here
	for _, p := range c.m.Catalog.Providers {
		if f := c.rep.Facts(p.Key()); f == nil {
			deferred[p.NamespaceKey()] = true
		} else {
			signs[f.Namespace+" "+f.Signer.Fingerprint] = true
		}
	}
	for _, d := range c.m.PublisherKeys {
		switch {
		case signs[d.Namespace+" "+d.Fingerprint]:
		case deferred[d.Namespace]:
			c.rep.Deferred = append(c.rep.Deferred, "publisher key declaration "+d.Fingerprint+" for "+d.Namespace)
		default:
			return inconsistent("publisher key declaration for "+d.Namespace, "it approves key %s, but no provider of that namespace in the bundle is signed by it: "+
				"a bundle may approve a new key only for providers it carries", d.Fingerprint)
		}
	}
	return nil
}

// checkProviderSignature checks sig over sums against the keys p carries;
// a site re-signature must be by the manifest's signer.
func (c *Checker) checkProviderSignature(p dist.ProviderVersion, sums, sig []byte) (verify.Checked, error) {
	kr, err := c.keys(p)
	if err != nil {
		return verify.Checked{}, err
	}
	checked, err := verify.CheckSignature(kr, bytes.NewReader(sums), sig)
	if err != nil {
		return checked, fmt.Errorf("its SHA256SUMS signature does not verify against the keys the bundle carries for it: %w", err)
	}
	if (p.SiteSigned || p.MirrorHashesOnly) && !c.mayResign(p, checked.Signer.Fingerprint) {
		if len(c.m.Chain) > 0 {
			return checked, fmt.Errorf("marked as %s, but its SHA256SUMS is signed by %s, not by the signer of a hop of its chain whose signed manifest carries this record (a bundle exported from a store re-signs nothing)", dist.TrustLabel(p.Trust()), checked.Signer)
		}
		return checked, fmt.Errorf("marked as %s, but its SHA256SUMS is signed by %s, not by the key that signed the bundle (%s)", dist.TrustLabel(p.Trust()), checked.Signer, c.opt.Signer)
	}
	if !p.SiteSigned && !p.MirrorHashesOnly && c.isSiteKey(checked.Signer.Fingerprint) {
		return checked, fmt.Errorf("its SHA256SUMS is signed by %s, a key trusted to sign bundles, but it is not marked as re-signed by the site: a site key is never a publisher key", checked.Signer)
	}
	return checked, nil
}

// isSiteKey reports whether fp is the bundle signer's fingerprint, that of
// a key in SiteKeys, or that of a hop signer of its chain (a key that signs
// bundles is never a publisher key).
func (c *Checker) isSiteKey(fp string) bool {
	if fp == "" {
		return false
	}
	if strings.EqualFold(fp, c.opt.Signer.Fingerprint) || c.chain != nil && c.chain.signers[strings.ToUpper(fp)] {
		return true
	}
	for _, e := range c.opt.SiteKeys {
		if strings.EqualFold(fp, verify.Fingerprint(e)) {
			return true
		}
	}
	return false
}

// keys parses the signing keys a provider version carries (each distinct
// set once).
func (c *Checker) keys(p dist.ProviderVersion) (openpgp.EntityList, error) {
	return c.keyring.Keyring(p)
}

// KeyringCache holds the parsed signing keys of provider versions by their
// set of armored keys: every version of a provider carries the same keys,
// and parsing them is what costs. Not safe for concurrent use.
type KeyringCache map[string]openpgp.EntityList

// Keyring is ProviderKeyring(p), parsed once per distinct set of keys.
func (kc KeyringCache) Keyring(p dist.ProviderVersion) (openpgp.EntityList, error) {
	var id strings.Builder
	for _, k := range p.SigningKeys {
		id.WriteString(k.ASCIIArmor)
		id.WriteByte(0)
	}
	if kr, ok := kc[id.String()]; ok {
		return kr, nil
	}
	kr, err := ProviderKeyring(p)
	if err != nil {
		return nil, err
	}
	kc[id.String()] = kr
	return kr, nil
}

// ProviderKeyring parses the signing keys p carries, the copies of one key
// among them merged (verify.MergeCopies: a registry that lists a key and,
// as another entry, its revoked copy lists one revoked key).
func ProviderKeyring(p dist.ProviderVersion) (openpgp.EntityList, error) {
	var kr openpgp.EntityList
	for _, k := range p.SigningKeys {
		el, err := verify.ReadKeyring(strings.NewReader(k.ASCIIArmor))
		if err != nil {
			return nil, fmt.Errorf("its signing key %q is unreadable: %w", k.KeyID, err)
		}
		kr = append(kr, el...)
	}
	return verify.MergeCopies(kr), nil
}

// ProviderSignature checks a provider version's SHA256SUMS signature
// (the bytes of its two blobs) against the keys it carries, as of the
// signature's creation. For reports on what is already in a store.
func ProviderSignature(p dist.ProviderVersion, sums, sig []byte) (verify.Checked, error) {
	kr, err := ProviderKeyring(p)
	if err != nil {
		return verify.Checked{}, err
	}
	return verify.CheckSignature(kr, bytes.NewReader(sums), sig)
}
