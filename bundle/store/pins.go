package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Publisher-key pins, as SSH pins host keys. The index records, for each
// provider namespace (host/namespace), every key its providers' SHA256SUMS
// have been accepted with: when, from which bundle, and how
// (Index.PublisherKeys, dist.KeyPin). An import (the KeyPins policy) then
// decides each provider version of a bundle by its signer, from the
// Checker's signature facts — the same decision 'airgap verify' shows
// (keyReview.Evaluate):
//
//   - a key the namespace has: accepted (a key re-published with a new
//     expiry has the same fingerprint: the same key; the newer expiry is
//     recorded);
//   - the namespace has no publisher key yet: accepted and pinned — trust
//     on first use, recorded as such (how: first_use) — except in a
//     store that takes new keys only from the station (StationOnly, below),
//     where a first key too needs the station's approval. A pins file
//     (PinsFile) decides instead where it lists the namespace, so a site
//     can pin keys before the first import;
//   - a new key for a namespace that has one: refused, naming the
//     namespace and the old and new keys, unless a transfer station's
//     approval of the bundle accepts it ('airgap approve
//     --accept-publisher-key', checked by the approvals rule), the bundle
//     declares it (bundle.PublisherKeyDecl, signed by the site key:
//     'export --accept-new-publisher-key') or the import is given
//     --accept-publisher-key FINGERPRINT; either way it is pinned too. A
//     store whose import.hcl says publisher_key_approvals = "station"
//     takes only the first (StationOnly): the exporting laptop, which key
//     pins exist to distrust, cannot approve a key there;
//   - a key the store has retired for the namespace ('airgap keys
//     retire'), or whose revocation it has seen (in any bundle's carried
//     keys, or 'airgap keys revoke'), is judged by the store's one
//     signature-time rule, judgeSignature (it signs nothing new, whatever
//     the bundle's copy of the key says). Nothing approves such a key.
//
// Site re-signed providers (the registry published no key; see
// check.SiteResignHost) have no publisher key to pin. In a namespace that
// has no publisher key they are accepted and nothing is recorded. In a
// namespace that has one, a site re-signature is a downgrade — exactly
// what a registry that stopped listing keys would cause — and is refused
// like a new key, unless approved the same ways (the site key is then
// pinned for the namespace, tier site_resigned).
//
// Stores that predate pins: the first import by an airgap that pins
// records, for every namespace of the catalog without a row, the keys its
// providers were signed by (how: in_store_before_pins), from the store's
// own SHA256SUMS and signatures (History).

// Key statuses of a KeyDecision (the "key_status" of a provider in
// 'airgap verify --json').
const (
	keyPinned        = "pinned"           // the namespace has this key
	keyFirstUse      = "first_use"        // the namespace has no key yet: pinned at import
	keyDeclared      = "new_declared"     // new for the namespace, approved by the bundle
	keyAccepted      = "new_accepted"     // new, approved by --accept-publisher-key
	keyPinsFile      = "pins_file"        // new to the store, listed in the pins file
	keyRefused       = "new_refused"      // new for the namespace and not approved: import refuses
	keyNotInPinsFile = "not_in_pins_file" // the pins file does not allow it: import refuses
	keySiteResigned  = "site_resigned"    // re-signed by the site; the namespace has no publisher key to compare
	keyUnknown       = "unknown"          // the offline side's keys are unknown (verify without --against), or the signature is not checked here
	keyStation       = "new_station"      // new, approved by a transfer station's signed approval
	keyRetired       = "retired"          // the store retired the key for the namespace: import refuses a new signature by it
	keyRevoked       = "revoked"          // the store has seen the key's revocation: import refuses a new or later signature by it
)

// Refused reports whether status makes an import refuse the provider.
func Refused(status string) bool {
	switch status {
	case keyRefused, keyNotInPinsFile, keyRetired, keyRevoked:
		return true
	}
	return false
}

// KeyDecision is what the pins say about one provider version of a bundle.
type KeyDecision struct {
	Provider  string // "host/namespace/type version"
	Key       string // dist.ProviderVersion.Key
	Version   dist.ProviderVersion
	Namespace string // dist.NamespaceKey
	Trust     string
	Signer    verify.Signer
	Status    string
	Note      string        // for people: why this status
	Known     []dist.KeyPin // the namespace's keys before this bundle (nil: unknown)
	Pin       *dist.KeyPin  // what the import records (nil: nothing new)
	Expires   *time.Time    // the key's expiry as this bundle's copy says
	Facts     *check.SignatureFacts
}

// keyReview decides a bundle's providers against what the offline side
// has: the same function for import (KeyPins) and verify.
type keyReview struct {
	// History is the offline side's pins by namespace (History), or nil
	// when unknown (verify without --against).
	History map[string]*dist.NamespaceKeys
	// Unknown lists namespaces whose keys History does not tell (an
	// inventory from an airgap that did not pin): decided as if History
	// were nil.
	Unknown map[string]bool
	Pins    *PinsFile // the site's pins file, or nil
	Accept  []string  // fingerprints given to --accept-publisher-key
	// Station are the publisher keys the bundle's valid station approvals
	// accept; StationOnly makes them the only approval of a new key
	// (import.hcl: publisher_key_approvals = "station").
	Station     []approval.PublisherKey
	StationOnly bool
	// Served is the signature the store serves for each provider version
	// it has (by dist.ProviderVersion.Key), and Revoked the revocations it
	// has seen: a retired or revoked key signs nothing new.
	Served  map[string]verify.Digest
	Revoked map[string]*RevokedKey
	Bundle  verify.Digest
	Now     time.Time
}

// Evaluate decides every provider version of m, in catalog order, from
// the checker's facts.
func (kr *keyReview) Evaluate(m *bundle.Manifest, checked *check.Result) []KeyDecision {
	declared := map[string]bool{}
	for _, d := range m.PublisherKeys {
		declared[d.Namespace+" "+d.Fingerprint] = true
	}
	// Keys this bundle adds, so its later providers see them (two
	// providers of a new namespace signed by one key are one first use).
	added := map[string]*dist.NamespaceKeys{}
	out := make([]KeyDecision, 0, len(m.Catalog.Providers))
	for _, p := range m.Catalog.Providers {
		d := KeyDecision{Provider: p.String(), Key: p.Key(), Version: p, Namespace: p.NamespaceKey(), Trust: check.Trust(p)}
		f := checked.Facts(p.Key())
		if f == nil {
			d.Status, d.Note = keyUnknown, "its SHA256SUMS signature is not in this delta bundle: import checks it"
			out = append(out, d)
			continue
		}
		d.Signer, d.Expires, d.Facts = f.Signer, f.KeyExpires, f
		var known *dist.NamespaceKeys
		if kr.History != nil && !kr.Unknown[d.Namespace] {
			known = kr.History[d.Namespace]
			if known == nil {
				known = &dist.NamespaceKeys{Namespace: d.Namespace}
			}
			d.Known = append([]dist.KeyPin(nil), known.Keys...)
			if a := added[d.Namespace]; a != nil {
				known = &dist.NamespaceKeys{Namespace: d.Namespace, Keys: append(append([]dist.KeyPin(nil), known.Keys...), a.Keys...)}
			}
		}
		kr.decide(&d, known, declared[d.Namespace+" "+f.Signer.Fingerprint])
		kr.signsNothingNew(&d, known)
		if d.Pin != nil {
			if added[d.Namespace] == nil {
				added[d.Namespace] = &dist.NamespaceKeys{Namespace: d.Namespace}
			}
			a := added[d.Namespace]
			if a.Find(d.Pin.Fingerprint) == nil {
				a.Keys = append(a.Keys, *d.Pin)
			}
		}
		out = append(out, d)
	}
	return out
}

// decide sets d's status (and the pin to record) for its signer, given
// the namespace's keys (nil: unknown) and whether the bundle declares the
// key. The order is the policy: the pins file first, then the store's
// keys, then approvals.
func (kr *keyReview) decide(d *KeyDecision, known *dist.NamespaceKeys, isDeclared bool) {
	fp := d.Signer.Fingerprint
	pin := func(how string) {
		d.Pin = &dist.KeyPin{Fingerprint: fp, KeyID: d.Signer.KeyID, Identity: d.Signer.Identity, Tier: d.Trust,
			Accepted: kr.Now.UTC().Truncate(time.Second), Bundle: kr.Bundle, How: how, Expires: d.Expires}
	}
	if governed, ok := kr.Pins.Allows(d.Namespace, fp); governed || !ok {
		switch {
		case !ok && !governed:
			d.Status, d.Note = keyNotInPinsFile, "the pins file lists no keys for this namespace and refuses unlisted ones"
		case !ok:
			d.Status, d.Note = keyNotInPinsFile, "the pins file allows only "+strings.Join(kr.Pins.Namespaces[d.Namespace], ", ")
		case known != nil && known.Find(fp) != nil:
			d.Status, d.Note = keyPinned, "listed in the pins file"
		default:
			d.Status, d.Note = keyPinsFile, "listed in the pins file"
			if known != nil {
				pin(dist.PinFile)
			}
		}
		return
	}
	approved := func() bool {
		switch {
		case kr.stationApproves(d.Namespace, fp):
			d.Status, d.Note = keyStation, "approved at the transfer station (a signed approval of this bundle)"
			pin(dist.PinStation)
		case isDeclared && !kr.StationOnly:
			d.Status, d.Note = keyDeclared, "the bundle declares it approved (export --accept-new-publisher-key)"
			pin(dist.PinDeclared)
		case kr.accepts(fp) && !kr.StationOnly:
			d.Status, d.Note = keyAccepted, "approved with --accept-publisher-key"
			pin(dist.PinOperator)
		default:
			return false
		}
		return true
	}
	if known == nil { // verify without --against: only the bundle's own word is known
		switch {
		case dist.SiteKeyed(d.Trust):
			d.Status, d.Note = keySiteResigned, "re-signed by the site key; whether the store has a publisher key for the namespace is not known here"
		case kr.stationApproves(d.Namespace, fp):
			d.Status, d.Note = keyStation, "approved at the transfer station (a signed approval of this bundle)"
		case isDeclared:
			d.Status, d.Note = keyDeclared, "the bundle declares it approved (export --accept-new-publisher-key)"
		default:
			d.Status, d.Note = keyUnknown, "not compared with the store's keys"
		}
		return
	}
	hasPublisher := known.HasTier(dist.TrustPublisher)
	switch {
	case known.Find(fp) != nil:
		d.Status, d.Note = keyPinned, "the namespace has this key"
		if k := known.Find(fp); d.Expires != nil && (k.Expires == nil || d.Expires.After(*k.Expires)) {
			d.Note = "the namespace has this key (re-published with a later expiry)"
		}
	case dist.SiteKeyed(d.Trust) && !hasPublisher:
		d.Status, d.Note = keySiteResigned, "re-signed by the site key; the namespace has no publisher key"
	case d.Trust == dist.TrustPublisher && !hasPublisher && kr.StationOnly:
		// A store that takes new keys only from the station takes its
		// first ones from there too: trust on first use would let the
		// exporting laptop pick the key every later version is held to.
		if kr.stationApproves(d.Namespace, fp) {
			d.Status, d.Note = keyStation, "the namespace's first publisher key, approved at the transfer station (a signed approval of this bundle)"
			pin(dist.PinStation)
		} else {
			d.Status, d.Note = keyRefused, "the namespace's first publisher key; this store takes publisher keys, its first ones too, only from a transfer station's approval"
		}
	case d.Trust == dist.TrustPublisher && !hasPublisher:
		d.Status, d.Note = keyFirstUse, "the namespace's first publisher key: pinned from this import on (trust on first use)"
		pin(dist.PinFirstUse)
	case approved():
	case dist.SiteKeyed(d.Trust):
		d.Status, d.Note = keyRefused, "a downgrade: the namespace's providers are signed by its publisher, this one only re-signed by the site key"
	case isDeclared && kr.StationOnly:
		d.Status, d.Note = keyRefused, "a new key for a namespace that has another; the bundle declares it approved, but this store takes new publisher keys only from a transfer station's approval"
	default:
		d.Status, d.Note = keyRefused, "a new key for a namespace that has another"
	}
}

// stationApproves reports whether a station approval accepts fp for ns.
func (kr *keyReview) stationApproves(ns, fp string) bool {
	for _, k := range kr.Station {
		if k.Namespace == ns && k.Fingerprint == fp {
			return true
		}
	}
	return false
}

// signsNothingNew refuses d when judgeSignature refuses its signature:
// its key revoked (seen by the store) or retired for the namespace, the
// signature held when the store serves this very SHA256SUMS signature.
func (kr *keyReview) signsNothingNew(d *KeyDecision, known *dist.NamespaceKeys) {
	fp := d.Signer.Fingerprint
	served := kr.Served != nil && kr.Served[d.Key] == d.Version.ShasumsSig
	s := keyStanding{revoked: kr.Revoked[fp]}
	if known != nil {
		if k := known.Find(fp); k != nil {
			s.retired = k.Retired
		}
	}
	var created time.Time
	if d.Facts != nil {
		created = d.Facts.Created
	}
	// A signature whose time is not known here is not taken as held.
	if st, why := judgeSignature(s, d.Signer, created, served && d.Facts != nil); st != "" {
		d.Status, d.Pin, d.Note = st, nil, why
	}
}

func orNoReason(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

func (kr *keyReview) accepts(fp string) bool {
	for _, a := range kr.Accept {
		if a == fp {
			return true
		}
	}
	return false
}

// KeyPins is the import policy of publisher-key pins (see above).
type KeyPins struct {
	Pins   *PinsFile // nil: none
	Accept []string  // --accept-publisher-key fingerprints
	// Approvals is the store's approvals rule, if it has one: the
	// publisher keys its valid approvals accept (it runs first).
	Approvals *Approvals
	// StationOnly: new keys are approved only by a station approval
	// (import.hcl: publisher_key_approvals = "station").
	StationOnly bool
	// Decisions is what Check decided, for the import's report (set by
	// Check; meaningful once the import has committed).
	Decisions []KeyDecision
	last      *keyReview // what Check decided with (the forecast shows its history)
}

// Check implements Policy: it refuses every provider whose key is refused,
// naming each namespace with its old and new keys, and records the keys
// the import accepts (and, once, the keys of the store's namespaces that
// have no row yet).
func (kp *KeyPins) Check(in *PolicyInput, out *PolicyResult) error {
	kr := kp.review(in)
	ds := kr.Evaluate(in.Manifest, in.Checked)
	kp.Decisions, kp.last = ds, kr
	if err := unusedAccepts(kp.Accept, ds, in.Manifest.Catalog.Releases); err != nil {
		out.Refuse(err, Refusal{Rule: RulePublisherKey, Reason: firstLine(err.Error())})
	}
	if rs, err := refusals(ds, kr.StationOnly); err != nil {
		out.Refuse(err, rs...)
	}
	var pins []dist.KeyPin
	var expiries []KeyDecision
	for _, d := range ds {
		if d.Status == keyUnknown && in.Root != "" {
			return fmt.Errorf("provider %s: its SHA256SUMS signature was not checked, so its publisher key cannot be decided", d.Provider)
		}
		if d.Pin != nil {
			pins = append(pins, *d.Pin)
		} else if d.Status == keyPinned && d.Expires != nil {
			expiries = append(expiries, d)
		}
	}
	if len(pins) == 0 && !newerExpiry(in.History, expiries) && (len(in.Seeded) == 0 || imported(in.Index, in.Bundle)) {
		// Nothing new; the keys of a store that predates pins are
		// recorded by the first import that changes the store (a bundle
		// imported again changes nothing).
		return nil
	}
	seeded := in.Seeded
	out.Record(func(ix *Index) {
		ix.PublisherKeys = mergePins(ix.PublisherKeys, seeded, ds)
	})
	return nil
}

// review is the keyReview of in: the store's key history, revocations and
// served signatures, and the approvals of this import.
func (kp *KeyPins) review(in *PolicyInput) *keyReview {
	kr := &keyReview{History: map[string]*dist.NamespaceKeys{}, Unknown: in.Unknown, Pins: kp.Pins, Accept: kp.Accept, StationOnly: kp.StationOnly,
		Bundle: in.Bundle, Now: in.Now, Revoked: revokedByFingerprint(in.Index.RevokedKeys), Served: map[string]verify.Digest{}}
	for i := range in.History {
		kr.History[in.History[i].Namespace] = &in.History[i]
	}
	for _, p := range in.Index.Catalog.Providers {
		kr.Served[p.Key()] = p.ShasumsSig
	}
	if kp.Approvals != nil {
		kr.Station = kp.Approvals.PublisherKeys()
	}
	return kr
}

// imported reports whether the store's history has bundle.
func imported(ix *Index, b verify.Digest) bool {
	for _, e := range ix.Imports {
		if e.Bundle == b {
			return true
		}
	}
	return false
}

// unusedAccepts refuses an --accept-publisher-key that signs no provider
// or CLI release of the bundle: a typo would otherwise approve nothing,
// silently.
func unusedAccepts(accept []string, ds []KeyDecision, rels []dist.CLIRelease) error {
	for _, fp := range accept {
		used := false
		for _, d := range ds {
			used = used || d.Signer.Fingerprint == fp
		}
		for _, r := range rels {
			used = used || r.KeyFingerprint == fp
		}
		if !used {
			return fmt.Errorf("%w: --accept-publisher-key %s: no provider of the bundle is signed by that key\nhint: 'airgap verify' lists each provider's key; give the fingerprint of the one to approve", ErrPublisherKey, verify.GroupFingerprint(fp))
		}
	}
	return nil
}

// refusals is the error for every refused decision, one paragraph per
// namespace and key, and a Refusal per provider version, or nil.
func refusals(ds []KeyDecision, stationOnly bool) ([]Refusal, error) {
	type group struct {
		d         KeyDecision
		providers []string
	}
	var order []string
	var rs []Refusal
	groups := map[string]*group{}
	for _, d := range ds {
		if !Refused(d.Status) {
			continue
		}
		rs = append(rs, providerRefusal(RulePublisherKey, d.Version, fmt.Sprintf("signed by %s: %s", describeKey(d.Signer.Fingerprint, d.Signer.Identity), d.Note)))
		k := d.Namespace + " " + d.Signer.Fingerprint
		if groups[k] == nil {
			groups[k] = &group{d: d}
			order = append(order, k)
		}
		groups[k].providers = append(groups[k].providers, d.Provider)
	}
	if len(order) == 0 {
		return nil, nil
	}
	var b strings.Builder
	// One key often signs several namespaces (a publisher's, HashiCorp's
	// for hashicorp and its partners): the hint names each key once, with
	// the namespaces it is new for.
	var fps []string
	nss := map[string][]string{}
	hint := ""
	for i, k := range order {
		g := groups[k]
		if i > 0 {
			b.WriteString("\n")
		}
		what := "new for the namespace"
		switch g.d.Status {
		case keyRetired:
			what = "retired for the namespace"
		case keyRevoked:
			what = "revoked"
		}
		fmt.Fprintf(&b, "namespace %s: %s signed by %s, %s (%s)\n  the store has accepted: %s",
			g.d.Namespace, listProviders(g.providers), describeKey(g.d.Signer.Fingerprint, g.d.Signer.Identity), what, g.d.Note, describePins(g.d.Known))
		switch g.d.Status {
		case keyRefused:
			fp := verify.GroupFingerprint(g.d.Signer.Fingerprint)
			if nss[fp] == nil {
				fps = append(fps, fp)
			}
			nss[fp] = append(nss[fp], g.d.Namespace)
		case keyNotInPinsFile:
			hint = "the site's pins file does not allow this key: if the publisher really changed its key, add the new fingerprint to the pins file"
		case keyRetired, keyRevoked:
			if hint == "" {
				hint = "a retired or revoked key signs nothing new: ask the publisher for versions signed by its current key, and export those"
			}
		}
	}
	if len(fps) > 0 {
		approve := fmt.Sprintf("import again with --accept-publisher-key '%s', or have the bundle exported with --accept-new-publisher-key", strings.Join(fps, "' --accept-publisher-key '"))
		if stationOnly {
			approve = fmt.Sprintf("approve it at the transfer station ('airgap approve --key STATION.key.asc --accept-publisher-key '%s' BUNDLE'; this store takes new publisher keys only from there)", strings.Join(fps, "' --accept-publisher-key '"))
		}
		keys := make([]string, len(fps))
		for i, fp := range fps {
			keys[i] = fp + " for " + strings.Join(nss[fp], ", ")
		}
		hint = "check the new fingerprint with the publisher itself (not with the bundle): " + strings.Join(keys, "; ") + "; if it is theirs, " + approve + "; if not, do not import this bundle"
	}
	return rs, fmt.Errorf("%w:\n%s\nhint: %s", ErrPublisherKey, dist.PrintableLines(b.String()), hint)
}

// listProviders names at most maxListed providers.
func listProviders(ps []string) string {
	if len(ps) <= maxListed {
		return strings.Join(ps, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ps[:maxListed], ", "), len(ps)-maxListed)
}

// describeKey names a key for messages: fingerprint and identity.
func describeKey(fp, identity string) string {
	if identity == "" {
		return "key " + verify.GroupFingerprint(fp)
	}
	return fmt.Sprintf("key %s (%s)", verify.GroupFingerprint(fp), dist.Printable(identity))
}

func describePins(ks []dist.KeyPin) string {
	if len(ks) == 0 {
		return "no key"
	}
	var parts []string
	for _, k := range ks {
		line := fmt.Sprintf("%s since %s (%s)", describeKey(k.Fingerprint, k.Identity), k.Accepted.UTC().Format("2006-01-02"), strings.ReplaceAll(k.How, "_", " "))
		if k.Retired != nil {
			line += ", retired " + k.Retired.UTC().Format("2006-01-02")
		}
		parts = append(parts, line)
	}
	return strings.Join(parts, "; ")
}
