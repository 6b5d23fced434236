package check

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// unit is one thing of this bundle's manifest that must be found in a hop's
// manifest (a tie), keyed by a digest of what must be equal.
type unit struct {
	what  string
	entry string // the entry's catalog key, for a version record ("" otherwise)
	found bool
}

// unitKey is a digest of v's JSON form: two records tie when their
// fields are equal.
func unitKey(kind string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain records of strings and numbers
	}
	h := sha256.Sum256(append([]byte(kind+"\x00"), b...))
	return hex.EncodeToString(h[:])
}

// What each kind of record ties by. A store builds its catalog from the
// bundles it imports (dist.Catalog.Merge): a provider version's record
// (all but its packages and docs) is the last bundle's that carried it,
// each package's the last bundle's that carried that platform (its build
// information may come from an earlier one: it is checked against the
// zip anyway), each gate result one bundle's, a module version's record
// the last bundle's, and a version's docs and a module's zip may come
// from an earlier bundle than the rest. So each of these must appear,
// equal, in one hop's manifest.
func versionUnit(p dist.ProviderVersion) string {
	v := p
	v.Packages, v.Docs = nil, nil
	return unitKey("provider", v)
}

func providerDocsUnit(p dist.ProviderVersion) string {
	return unitKey("provider-docs", struct {
		Key  string
		Docs *dist.ProviderDocs
	}{p.Key(), p.Docs})
}

func moduleDocsUnit(mv dist.ModuleVersion) string {
	return unitKey("module-docs", []string{mv.Key(), string(mv.Archive), string(mv.Docs)})
}

func packageUnit(p dist.ProviderVersion, pk dist.Package) string {
	k := pk
	k.BuildInfo, k.Gates = "", nil
	return unitKey("package", struct {
		Key string
		Pkg dist.Package
	}{p.Key(), k})
}

func moduleUnit(mv dist.ModuleVersion) string {
	v := mv
	v.Zip, v.ZipSize, v.Gates, v.Docs = "", 0, nil, ""
	return unitKey("module", v)
}

func moduleZipUnit(mv dist.ModuleVersion) string {
	return unitKey("module-zip", []string{mv.Key(), string(mv.Archive), string(mv.Zip), fmt.Sprint(mv.ZipSize)})
}

func gateUnit(entry string, r dist.GateResult) string {
	return unitKey("gate", struct {
		Entry  string
		Result dist.GateResult
	}{entry, r})
}

// unitInfo is one record of a manifest, as walkUnits visits it.
type unitInfo struct {
	what     string
	entry    string                // "p KEY" or "m KEY" for a version record
	provider *dist.ProviderVersion // for a provider version record
	gate     *dist.GateResult      // for a gate result (on an entry of kind gateKind)
	gateKind string
}

// walkUnits calls visit with the key of every record of m that ties
// (versionUnit and the rest) and what it is.
func walkUnits(m *bundle.Manifest, visit func(key string, u unitInfo) error) error {
	for i := range m.Catalog.Providers {
		p := &m.Catalog.Providers[i]
		if err := visit(versionUnit(*p), unitInfo{what: "provider " + p.String(), entry: "p " + p.Key(), provider: p}); err != nil {
			return err
		}
		if p.Docs != nil {
			if err := visit(providerDocsUnit(*p), unitInfo{what: "provider " + p.String() + " docs"}); err != nil {
				return err
			}
		}
		for _, pk := range p.Packages {
			if err := visit(packageUnit(*p, pk), unitInfo{what: "provider " + p.String() + " " + pk.Platform()}); err != nil {
				return err
			}
			on := "p " + p.Key() + " " + pk.Platform()
			for j := range pk.Gates {
				r := &pk.Gates[j]
				u := unitInfo{what: "gate " + r.Gate + " result on provider " + p.String() + " " + pk.Platform(), gate: r, gateKind: dist.GateProviders}
				if err := visit(gateUnit(on, *r), u); err != nil {
					return err
				}
			}
		}
	}
	for _, mv := range m.Catalog.Modules {
		if err := visit(moduleUnit(mv), unitInfo{what: "module " + mv.String(), entry: "m " + mv.Key()}); err != nil {
			return err
		}
		if mv.Zip != "" {
			if err := visit(moduleZipUnit(mv), unitInfo{what: "module " + mv.String() + " zip"}); err != nil {
				return err
			}
		}
		if mv.Docs != "" {
			if err := visit(moduleDocsUnit(mv), unitInfo{what: "module " + mv.String() + " docs"}); err != nil {
				return err
			}
		}
		on := "m " + mv.Key()
		for j := range mv.Gates {
			r := &mv.Gates[j]
			u := unitInfo{what: "gate " + r.Gate + " result on module " + mv.String(), gate: r, gateKind: dist.GateModules}
			if err := visit(gateUnit(on, *r), u); err != nil {
				return err
			}
		}
	}
	return nil
}

// Ties is what of a manifest must be tied to the chain's hops: every
// record the chain check ties (see checkChain). An export from a store
// uses it to choose the hops it carries; the check, to tie them.
type Ties struct {
	units map[string]*unit
}

// NewTies lists what of m must be tied.
func NewTies(m *bundle.Manifest) *Ties {
	t := &Ties{units: map[string]*unit{}}
	walkUnits(m, func(key string, u unitInfo) error {
		t.units[key] = &unit{what: u.what, entry: u.entry}
		return nil
	})
	return t
}

// Mark marks every record hm (a hop's manifest) carries, calling found
// (if not nil) with each of them, and reports whether hm carries one that
// no manifest marked before did.
func (t *Ties) Mark(hm *bundle.Manifest, found func(u *unit, info unitInfo) error) (fresh bool, err error) {
	err = walkUnits(hm, func(key string, info unitInfo) error {
		u := t.units[key]
		if u == nil {
			return nil
		}
		fresh = fresh || !u.found
		if found != nil {
			return found(u, info)
		}
		u.found = true
		return nil
	})
	return fresh, err
}

// Untied lists, sorted, what no marked manifest carried.
func (t *Ties) Untied() []string {
	var out []string
	for _, u := range t.units {
		if !u.found {
			out = append(out, u.what)
		}
	}
	sort.Strings(out)
	return out
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
// carries it (by SignatureSlack), and not past this machine's clock.
func checkHopTime(entry string, created, bundleSigned, now time.Time, reproducible bool) error {
	if created.After(now.Add(MaxClockAhead)) {
		return fmt.Errorf("%w: %s: its signature is dated %s, more than a day after this machine's clock (%s)\nhint: the date was forged (or this machine's clock is wrong: check it); do not import the bundle",
			bundle.ErrSignatureTime, entry, stamp(created), stamp(now))
	}
	if reproducible || bundleSigned.IsZero() || !created.After(bundleSigned.Add(SignatureSlack)) {
		return nil
	}
	return fmt.Errorf("%w: %s: its signature is dated %s, after the bundle that carries it was signed (%s)\nhint: the date was forged, or a clock on the way was far behind; do not import the bundle",
		bundle.ErrSignatureTime, entry, stamp(created), stamp(bundleSigned))
}

// tieHop marks the records of this bundle that hop h's manifest hm
// carries, records who may have re-signed what, and checks each tied gate
// result against hm's definition of its gate.
func (c *Checker) tieHop(h *HopCheck, hm *bundle.Manifest, ties *Ties) error {
	gates := make(map[string]dist.Gate, len(hm.Gates))
	for _, g := range hm.Gates {
		gates[g.Name] = g
	}
	sizes := make(map[verify.Digest]int64, len(hm.Blobs))
	for _, b := range hm.Blobs {
		sizes[b.Digest] = b.Size
	}
	_, err := ties.Mark(hm, func(u *unit, info unitInfo) error {
		if !u.found {
			u.found = true
			if u.entry != "" {
				c.chain.came[u.entry] = h.Bundle
				h.Brought++
			}
		}
		if p := info.provider; p != nil && (p.SiteSigned || p.MirrorHashesOnly) {
			if c.chain.resigners[p.Key()] == nil {
				c.chain.resigners[p.Key()] = map[string]bool{}
			}
			c.chain.resigners[p.Key()][h.Signer.Fingerprint] = true
		}
		if r := info.gate; r != nil {
			g, ok := gates[r.Gate]
			return checkGateResult("chain hop "+h.Bundle.Short()+": "+info.what, info.gateKind, *r, g, ok, sizes[r.Report])
		}
		return nil
	})
	return err
}

// recordCheck holds the chain to what its checked hops recorded (their own
// chains), one hop manifest at a time: every hop a hop g's chain lists is
// in this chain, equal but for Into (which there is "" for the store g
// was exported from, here g's signer); and every hop said to have come
// into an earlier store is listed by a hop that store exported (one its
// Into signed). It keeps one mark per hop of this chain, never the
// records themselves: memory is O(MaxHops), whatever the hops' chains
// hold.
type recordCheck struct {
	by        map[verify.Digest]bundle.Hop
	confirmed map[verify.Digest]bool // hops listed by a checked hop their Into signed
}

func newRecordCheck(hops []HopCheck) *recordCheck {
	rc := &recordCheck{by: make(map[verify.Digest]bundle.Hop, len(hops)), confirmed: map[verify.Digest]bool{}}
	for _, h := range hops {
		rc.by[h.Bundle] = h.Hop
	}
	return rc
}

// hop checks the records of checked hop g's own chain.
func (rc *recordCheck) hop(g bundle.Hop, records []bundle.Hop) error {
	for _, r := range records {
		want := r
		if want.Into == "" {
			want.Into = g.Signer.Fingerprint
		}
		got, ok := rc.by[r.Bundle]
		switch {
		case !ok:
			return inconsistent("chain hop "+g.Bundle.Short(), "its own chain lists hop %s, which this bundle's chain lacks", r.Bundle.Short())
		case unitKey("hop", got) != unitKey("hop", want):
			return inconsistent("chain hop "+r.Bundle.Short(), "this bundle's chain records it otherwise than hop %s's signed manifest did", g.Bundle.Short())
		}
		if got.Into == g.Signer.Fingerprint {
			rc.confirmed[r.Bundle] = true
		}
	}
	return nil
}

// finish checks that every hop said to have come into an earlier store
// was listed by a checked hop that store exported (or could be: one whose
// blobs a delta omits).
func (rc *recordCheck) finish(hops []HopCheck) error {
	open := map[string]bool{} // signers with a deferred hop
	for _, h := range hops {
		if h.Deferred {
			open[h.Signer.Fingerprint] = true
		}
	}
	for _, h := range hops {
		if h.Into == "" || rc.confirmed[h.Bundle] || open[h.Into] {
			continue
		}
		return inconsistent("chain hop "+h.Bundle.Short(), "it is said to have come into the store whose exports %s signs, but no signed manifest of that store's exports in the chain lists it", verify.GroupFingerprint(h.Into))
	}
	return nil
}

// untied refuses a bundle with an entry no checked hop carries — unless
// the chain has hops recorded without their manifests, which could have
// brought it: then the entries are listed (Result.Untied), for
// 'verify' to show and an import's chain policy to refuse.
func (c *Checker) untied(ties *Ties, recorded bool) error {
	missing := ties.Untied()
	if len(missing) == 0 {
		return nil
	}
	if recorded {
		c.rep.Untied = missing
		return nil
	}
	n := len(missing)
	if n > 5 {
		missing = append(missing[:5], fmt.Sprintf("and %d more", n-5))
	}
	return inconsistent("the chain of custody", "%d record(s) of this bundle are in no hop's signed manifest: %s; a bundle exported from a store carries only what bundles brought into it", n, strings.Join(missing, "; "))
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

// CameWith returns the hop (its bundle digest) a provider or module
// version of the bundle was first found in, oldest hop first, or "".
// kind is dist.KindProvider or dist.KindModule; key the entry's Key.
func (r *Result) CameWith(kind, key string) verify.Digest {
	if r.came == nil {
		return ""
	}
	if kind == dist.KindModule {
		return r.came["m "+key]
	}
	return r.came["p "+key]
}
