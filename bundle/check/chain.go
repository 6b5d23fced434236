package check

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// checkChainSizes bounds the chain's blobs: each hop manifest within
// MaxManifestSize and all of them within MaxHopManifests, each signature
// within MaxSignatureSize and each key within verify.MaxKeyringSize.
func checkChainSizes(m *bundle.Manifest, sizes map[verify.Digest]int64) error {
	var total, keyBytes int64
	keys := map[verify.Digest]bool{}
	key := func(d verify.Digest) error {
		if keys[d] {
			return nil
		}
		keys[d] = true
		if keyBytes += sizes[d]; len(keys) > bundle.MaxChainKeys || keyBytes > bundle.MaxChainKeyBytes {
			return inconsistent("the chain of custody", "its hops and approvals name over %d distinct keys, or over %d bytes of keys in all", bundle.MaxChainKeys, bundle.MaxChainKeyBytes)
		}
		return nil
	}
	for _, h := range m.Chain {
		if !h.Checkable() {
			continue
		}
		if err := key(h.Key); err != nil {
			return err
		}
		for _, a := range h.Approvals {
			if err := key(a.Key); err != nil {
				return err
			}
		}
		entry := "chain hop " + h.Bundle.Short()
		switch {
		case sizes[h.Bundle] > bundle.MaxManifestSize:
			return inconsistent(entry, "its manifest is %d bytes, over the %d-byte limit", sizes[h.Bundle], bundle.MaxManifestSize)
		case sizes[h.Signature] > bundle.MaxSignatureSize:
			return inconsistent(entry, "its signature is %d bytes, over the %d-byte limit", sizes[h.Signature], bundle.MaxSignatureSize)
		case sizes[h.Key] > verify.MaxKeyringSize:
			return inconsistent(entry, "its key is %d bytes, over the %d-byte limit", sizes[h.Key], verify.MaxKeyringSize)
		}
		if total += sizes[h.Bundle]; total > bundle.MaxHopManifests {
			return inconsistent("the chain of custody", "its hops' manifests are over %d bytes in all", bundle.MaxHopManifests)
		}
		for _, a := range h.Approvals {
			if sizes[a.Approval] > bundle.MaxApprovalSize || sizes[a.Key] > verify.MaxKeyringSize {
				return inconsistent(entry, "an approval of it (%s) or its station key is over its size limit", a.Approval.Short())
			}
		}
	}
	return nil
}

// HopCheck is what the check found about one hop of a bundle's chain
// (Result.Chain): the hop as the bundle records it, and what its own
// manifest says, read again.
type HopCheck struct {
	bundle.Hop
	// Level is how far back the hop is: 1 for a bundle the exporting store
	// imported, 2 for one the store before it imported, and so on.
	Level int
	// Checked: its signature was checked again against the key it came
	// with, and its manifest read. Deferred: its blobs are not in this
	// delta (import checks them with the store's copies).
	Checked, Deferred bool
	// What its manifest says: exported from a store (it has a chain of
	// its own), a delta, the airgap that wrote it, what it lists.
	FromStore, Delta   bool
	Tool               string
	Providers, Modules int
	Withdraws          int
	// Brought counts the entries of this bundle (provider and module
	// versions) first found, oldest hop first, in this hop's manifest.
	Brought int
	// ApprovalsChecked counts its station approvals checked again.
	ApprovalsChecked int
	// KeyringChecked: its signature was also checked with the copy of its
	// key in Options.ChainKeyring (one with its signer's
	// fingerprint is there); KeyringErr is what that check refused, ""
	// if it verified. A forecast of the chain policy reads them.
	KeyringChecked bool
	KeyringErr     string
}

// chainState is what checkChain learns for the rest of the check.
type chainState struct {
	// resigners: for a provider version (Key) marked as re-signed or with
	// mirror hashes only, the hop signers whose signed manifests carry
	// exactly its record: the keys its SHA256SUMS may be signed by.
	resigners map[string]map[string]bool
	// signers: every hop's signer (never a publisher key); recorded: the
	// signers of hops recorded without their manifests (what they may have
	// re-signed cannot be told: their records are listed as untied).
	signers, recorded map[string]bool
	// came: entry key ("p KEY" or "m KEY") -> the oldest hop it was found in.
	came map[string]verify.Digest
	// keys: each key blob read so far (at most MaxChainKeys), parsed.
	keys map[verify.Digest]chainKey
}

// chainKey is a key blob of the chain as read: its keys, or why not.
type chainKey struct {
	kr  openpgp.EntityList
	err error
}

// chainKeyring reads the key blob d at path (within
// verify.MaxKeyringSize) and parses it, once per check: hops and approvals
// that name the same key share it. readErr is the file's (not kept),
// keyErr the key's.
func (c *Checker) chainKeyring(d verify.Digest, path string) (kr openpgp.EntityList, readErr, keyErr error) {
	if k, ok := c.chain.keys[d]; ok {
		return k.kr, nil, k.err
	}
	data, err := readLimited(path, verify.MaxKeyringSize)
	if err != nil {
		return nil, err, nil
	}
	var k chainKey
	k.kr, k.err = verify.ReadKeyring(bytes.NewReader(data))
	c.chain.keys[d] = k
	return k.kr, nil, k.err
}

// checkChain checks a bundle's chain of custody (see Hop), before the
// providers' signatures, which it tells who may have re-signed:
//
//   - each checkable hop: its key (within the keyring limits) holds the
//     signer the hop names, its signature verifies over its manifest with
//     that key (judged at its creation, verify.CheckSignature) and is dated
//     as the hop says, not after this bundle's own signature (unless
//     reproducible) nor past this machine's clock, and the manifest parses
//     (ParseManifest: a newer format is refused with "upgrade airgap");
//   - what earlier enclaves said: every hop recorded in a hop's own chain
//     is in this chain, equal (Into adjusted), and every hop whose Into
//     names another hop is recorded there;
//   - ties: every provider version record, package, module version record,
//     module zip and gate result of this bundle appears, equal, in a hop's
//     manifest (a gate result also passes that hop's definition of its
//     gate), unless the chain has a recorded hop that cannot be checked
//     (then what is not tied is listed: Result.Untied).
//
// Hops whose blobs a delta omits (verify without the store) are deferred,
// and so are the ties and records that need them. Memory: one hop
// manifest at a time (MaxManifestSize, MaxHopManifests in all), the units
// of this bundle's manifest, a mark per hop (recordCheck), and each
// distinct key blob the chain names, parsed once (MaxChainKeys,
// MaxChainKeyBytes in all). Time: a signature check per hop and per
// approval (MaxChainApprovals), a read of each key.
func (c *Checker) checkChain() error {
	m := c.m
	c.chain = &chainState{resigners: map[string]map[string]bool{}, signers: map[string]bool{}, recorded: map[string]bool{}, came: map[string]verify.Digest{}, keys: map[verify.Digest]chainKey{}}
	if len(m.Chain) == 0 {
		return nil
	}
	hops := orderChain(m.Chain)
	ties := NewTies(m)
	rec := newRecordCheck(hops)
	recorded, deferred := false, false
	for i := range hops {
		h := &hops[i]
		c.chain.signers[h.Signer.Fingerprint] = true
		if !h.Checkable() {
			recorded = true
			c.chain.recorded[h.Signer.Fingerprint] = true
			continue
		}
		hm, err := c.readHop(h)
		if err != nil {
			return err
		}
		if hm == nil {
			h.Deferred, deferred = true, true
			c.rep.Deferred = append(c.rep.Deferred, "chain hop "+h.Bundle.Short())
			continue
		}
		h.Checked = true
		h.FromStore, h.Delta, h.Tool = len(hm.Chain) > 0, hm.Delta != nil, shortTool(hm.Tool)
		h.Providers, h.Modules, h.Withdraws = len(hm.Catalog.Providers), len(hm.Catalog.Modules), len(hm.Withdraw)
		if err := rec.hop(h.Hop, hm.Chain); err != nil {
			return err
		}
		if err := c.tieHop(h, hm, ties); err != nil {
			return err
		}
	}
	c.rep.Chain = hops
	if err := rec.finish(hops); err != nil {
		return err
	}
	if deferred {
		c.rep.Deferred = append(c.rep.Deferred, "ties of the entries to the chain of custody")
		return nil
	}
	return c.untied(ties, recorded)
}

// maxTool bounds the tool string kept of each hop (it is only shown): a
// hop's manifest may say anything there, up to its size limit, and a
// chain holds many.
const maxTool = 128

func shortTool(s string) string {
	if len(s) > maxTool {
		s = s[:maxTool] + "…"
	}
	return strings.Clone(s)
}

// readHop checks one hop's signature and returns its manifest, or nil when
// its blobs are not at hand (a delta at the transfer station).
func (c *Checker) readHop(h *HopCheck) (*bundle.Manifest, error) {
	entry := "chain hop " + h.Bundle.Short()
	mp, ok1 := c.have(h.Bundle)
	sp, ok2 := c.have(h.Signature)
	kp, ok3 := c.have(h.Key)
	if !ok1 || !ok2 || !ok3 {
		return nil, nil
	}
	kr, rerr, err := c.chainKeyring(h.Key, kp)
	switch {
	case rerr != nil:
		return nil, fmt.Errorf("%s: reading its key: %w", entry, rerr)
	case err != nil:
		return nil, inconsistent(entry, "the key it carries is unreadable: %v", err)
	}
	data, err := readLimited(mp, bundle.MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("%s: reading its manifest: %w", entry, err)
	}
	sig, err := readLimited(sp, bundle.MaxSignatureSize)
	if err != nil {
		return nil, fmt.Errorf("%s: reading its signature: %w", entry, err)
	}
	checked, err := verify.CheckSignature(kr, bytes.NewReader(data), sig)
	switch {
	case err != nil:
		return nil, inconsistent(entry, "its signature does not verify with the key it carries: %v", err)
	case checked.Signer != h.Signer:
		return nil, inconsistent(entry, "the chain says %s signed it, but its signature is by %s", h.Signer, checked.Signer)
	case !checked.Created.Equal(*h.SignedAt):
		return nil, inconsistent(entry, "the chain says it was signed on %s, but its signature is dated %s", stamp(*h.SignedAt), stamp(checked.Created))
	}
	if err := checkHopTime(entry, checked.Created, c.opt.SignedAt, c.opt.Now, c.m.Created != nil); err != nil {
		return nil, err
	}
	c.checkHopKeyring(h, data, sig)
	if err := c.checkApprovals(h); err != nil {
		return nil, err
	}
	hm, err := bundle.ParseManifest(data)
	if err != nil {
		if errors.Is(err, bundle.ErrTooNew) {
			return nil, fmt.Errorf("%s: %w", entry, err)
		}
		return nil, inconsistent(entry, "its signed manifest does not parse: %v", err)
	}
	return hm, nil
}

// checkHopKeyring checks the hop's signature again with the chain
// keyring's copy of its signer's key, if the keyring has one (a copy may
// carry a revocation or an expiry the hop's own copy lacks): what the
// import's chain policy will find, for the forecast.
func (c *Checker) checkHopKeyring(h *HopCheck, data, sig []byte) {
	for _, e := range c.opt.ChainKeyring {
		if verify.Fingerprint(e) != h.Signer.Fingerprint {
			continue
		}
		h.KeyringChecked = true
		if _, err := verify.CheckSignature(openpgp.EntityList{e}, bytes.NewReader(data), sig); err != nil {
			h.KeyringErr = err.Error()
		}
		return
	}
}

// checkApproval parses an approval file and checks its signature against
// keyring (the station key carried beside it), returning what it approves,
// by whom and when.
func checkApproval(data []byte, keyring openpgp.EntityList) (verify.Digest, verify.Signer, time.Time, error) {
	a, err := approval.Parse(data)
	if err != nil {
		return "", verify.Signer{}, time.Time{}, err
	}
	c, err := a.Check(keyring)
	if err != nil {
		return "", verify.Signer{}, time.Time{}, err
	}
	return a.Bundle, c.Signer, a.Time, nil
}

// checkApprovals checks each station approval a hop carries: the file's
// one form and the station's signature with the key carried beside it
// (checkApproval), of exactly this hop's bundle, by the station and at the
// time the chain records. Each file and key is read within its limit.
func (c *Checker) checkApprovals(h *HopCheck) error {
	entry := "chain hop " + h.Bundle.Short()
	for _, a := range h.Approvals {
		ap, ok1 := c.have(a.Approval)
		kp, ok2 := c.have(a.Key)
		if !ok1 || !ok2 {
			return inconsistent(entry, "its approval %s or the station key beside it is not in the bundle", a.Approval.Short())
		}
		data, err := readLimited(ap, bundle.MaxApprovalSize)
		if err != nil {
			return fmt.Errorf("%s: reading its approval %s: %w", entry, a.Approval.Short(), err)
		}
		kr, rerr, err := c.chainKeyring(a.Key, kp)
		switch {
		case rerr != nil:
			return fmt.Errorf("%s: reading a station key: %w", entry, rerr)
		case err != nil:
			return inconsistent(entry, "the station key of its approval %s is unreadable: %v", a.Approval.Short(), err)
		}
		b, station, at, err := checkApproval(data, kr)
		switch {
		case err != nil:
			return inconsistent(entry, "its approval %s does not check out with the station key carried beside it: %v", a.Approval.Short(), err)
		case b != h.Bundle:
			return inconsistent(entry, "its approval %s approves another bundle (%s)", a.Approval.Short(), b.Short())
		case station != a.Station || !at.Equal(a.Time):
			return inconsistent(entry, "the chain records its approval %s as by %s on %s, but the approval is by %s on %s", a.Approval.Short(), a.Station, stamp(a.Time), station, stamp(at))
		}
		h.ApprovalsChecked++
	}
	return nil
}

// checkHopTime holds a hop's signature time to what checkSumsTime holds a
// SHA256SUMS signature to: the hop was signed before the bundle that
// carries it (by signatureSlack), and not past this machine's clock.
func checkHopTime(entry string, created, bundleSigned, now time.Time, reproducible bool) error {
	if created.After(now.Add(MaxClockAhead)) {
		return fmt.Errorf("%w: %s: its signature is dated %s, more than a day after this machine's clock (%s)\nhint: the date was forged (or this machine's clock is wrong: check it); do not import the bundle",
			bundle.ErrSignatureTime, entry, stamp(created), stamp(now))
	}
	if reproducible || bundleSigned.IsZero() || !created.After(bundleSigned.Add(signatureSlack)) {
		return nil
	}
	return fmt.Errorf("%w: %s: its signature is dated %s, after the bundle that carries it was signed (%s)\nhint: the date was forged, or a clock on the way was far behind; do not import the bundle",
		bundle.ErrSignatureTime, entry, stamp(created), stamp(bundleSigned))
}

// orderChain returns the hops with their levels, oldest first: deepest
// level first, then by import time, then by bundle.
func orderChain(chain []bundle.Hop) []HopCheck {
	into := map[string]string{} // a signer -> where its hops went (the first found)
	for _, h := range chain {
		if _, ok := into[h.Signer.Fingerprint]; !ok {
			into[h.Signer.Fingerprint] = h.Into
		}
	}
	out := make([]HopCheck, len(chain))
	for i, h := range chain {
		level := 1
		for at := h.Into; at != "" && level <= len(chain); level++ {
			at = into[at]
		}
		out[i] = HopCheck{Hop: h, Level: level}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Level != b.Level {
			return a.Level > b.Level
		}
		if !a.Imported.Equal(b.Imported) {
			return a.Imported.Before(b.Imported)
		}
		return a.Bundle < b.Bundle
	})
	return out
}

// mayResign reports whether the key fp may have signed the SHA256SUMS of
// p, marked as re-signed or with mirror hashes only: the bundle's own
// signer for a bundle from the registries (its export re-signed it); for a
// bundle exported from a store, which re-signs nothing, the signer of a
// hop whose signed manifest carries exactly this record, or of a hop
// recorded without its manifest (whose records are then listed as
// untied).
func (c *Checker) mayResign(p dist.ProviderVersion, fp string) bool {
	if len(c.m.Chain) == 0 {
		return fp == c.opt.Signer.Fingerprint
	}
	return c.chain.resigners[p.Key()][fp] || c.chain.recorded[fp]
}
