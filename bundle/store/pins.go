package store

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Publisher-key pins, as SSH pins host keys. The index records, for each
// provider namespace (host/namespace), every key its providers' SHA256SUMS
// have been accepted with: when, from which bundle, and how
// (Index.PublisherKeys, dist.KeyPin). An import (the KeyPins policy) then
// decides each provider version of a bundle by its signer, from the
// Checker's signature facts — the same decision 'airgap verify' shows
// (KeyReview.Evaluate):
//
//   - a key the namespace has: accepted (a key re-published with a new
//     expiry has the same fingerprint: the same key; the newer expiry is
//     recorded);
//   - the namespace has no publisher key yet: accepted and pinned — trust
//     on first use, recorded as such (how: first_use). A pins file
//     (PinsFile) decides instead where it lists the namespace, so a site
//     can pin keys before the first import;
//   - a new key for a namespace that has one: refused, naming the
//     namespace and the old and new keys, unless the bundle declares it
//     (bundle.PublisherKeyDecl, signed by the site key:
//     'export --accept-new-publisher-key') or the import is given
//     --accept-publisher-key FINGERPRINT; either way it is pinned too.
//
// Site re-signed providers (the registry published no key; see
// bundle.SiteResignHost) have no publisher key to pin. In a namespace that
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
	KeyPinned        = "pinned"           // the namespace has this key
	KeyFirstUse      = "first_use"        // the namespace has no key yet: pinned at import
	KeyDeclared      = "new_declared"     // new for the namespace, approved by the bundle
	KeyAccepted      = "new_accepted"     // new, approved by --accept-publisher-key
	KeyPinsFile      = "pins_file"        // new to the store, listed in the pins file
	KeyRefused       = "new_refused"      // new for the namespace and not approved: import refuses
	KeyNotInPinsFile = "not_in_pins_file" // the pins file does not allow it: import refuses
	KeySiteResigned  = "site_resigned"    // re-signed by the site; the namespace has no publisher key to compare
	KeyUnknown       = "unknown"          // the offline side's keys are unknown (verify without --against), or the signature is not checked here
)

// Refused reports whether status makes an import refuse the provider.
func Refused(status string) bool { return status == KeyRefused || status == KeyNotInPinsFile }

// KeyDecision is what the pins say about one provider version of a bundle.
type KeyDecision struct {
	Provider  string // "host/namespace/type version"
	Key       string // dist.ProviderVersion.Key
	Namespace string // dist.NamespaceKey
	Trust     string
	Signer    verify.Signer
	Status    string
	Note      string        // for people: why this status
	Known     []dist.KeyPin // the namespace's keys before this bundle (nil: unknown)
	Pin       *dist.KeyPin  // what the import records (nil: nothing new)
	Expires   *time.Time    // the key's expiry as this bundle's copy says
	Facts     *bundle.SignatureFacts
}

// KeyReview decides a bundle's providers against what the offline side
// has: the same function for import (KeyPins) and verify.
type KeyReview struct {
	// History is the offline side's pins by namespace (History), or nil
	// when unknown (verify without --against).
	History map[string]*dist.NamespaceKeys
	// Unknown lists namespaces whose keys History does not tell (an
	// inventory from an airgap that did not pin): decided as if History
	// were nil.
	Unknown map[string]bool
	Pins    *PinsFile // the site's pins file, or nil
	Accept  []string  // fingerprints given to --accept-publisher-key
	Bundle  verify.Digest
	Now     time.Time
}

// Evaluate decides every provider version of m, in catalog order, from
// the checker's facts.
func (kr *KeyReview) Evaluate(m *bundle.Manifest, checked *bundle.CheckReport) []KeyDecision {
	declared := map[string]bool{}
	for _, d := range m.PublisherKeys {
		declared[d.Namespace+" "+d.Fingerprint] = true
	}
	// Keys this bundle adds, so its later providers see them (two
	// providers of a new namespace signed by one key are one first use).
	added := map[string]*dist.NamespaceKeys{}
	out := make([]KeyDecision, 0, len(m.Catalog.Providers))
	for _, p := range m.Catalog.Providers {
		d := KeyDecision{Provider: p.String(), Key: p.Key(), Namespace: p.NamespaceKey(), Trust: bundle.Trust(p)}
		f := checked.Facts(p.Key())
		if f == nil {
			d.Status, d.Note = KeyUnknown, "its SHA256SUMS signature is not in this delta bundle: import checks it"
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
func (kr *KeyReview) decide(d *KeyDecision, known *dist.NamespaceKeys, isDeclared bool) {
	fp := d.Signer.Fingerprint
	pin := func(how string) {
		d.Pin = &dist.KeyPin{Fingerprint: fp, KeyID: d.Signer.KeyID, Identity: d.Signer.Identity, Tier: d.Trust,
			Accepted: kr.Now.UTC().Truncate(time.Second), Bundle: kr.Bundle, How: how, Expires: d.Expires}
	}
	if governed, ok := kr.Pins.Allows(d.Namespace, fp); governed || !ok {
		switch {
		case !ok && !governed:
			d.Status, d.Note = KeyNotInPinsFile, "the pins file lists no keys for this namespace and refuses unlisted ones"
		case !ok:
			d.Status, d.Note = KeyNotInPinsFile, "the pins file allows only "+strings.Join(kr.Pins.Namespaces[d.Namespace], ", ")
		case known != nil && known.Find(fp) != nil:
			d.Status, d.Note = KeyPinned, "listed in the pins file"
		default:
			d.Status, d.Note = KeyPinsFile, "listed in the pins file"
			if known != nil {
				pin(dist.PinFile)
			}
		}
		return
	}
	approved := func() bool {
		switch {
		case isDeclared:
			d.Status, d.Note = KeyDeclared, "the bundle declares it approved (export --accept-new-publisher-key)"
			pin(dist.PinDeclared)
		case kr.accepts(fp):
			d.Status, d.Note = KeyAccepted, "approved with --accept-publisher-key"
			pin(dist.PinOperator)
		default:
			return false
		}
		return true
	}
	if known == nil { // verify without --against: only the bundle's own word is known
		switch {
		case dist.SiteKeyed(d.Trust):
			d.Status, d.Note = KeySiteResigned, "re-signed by the site key; whether the store has a publisher key for the namespace is not known here"
		case isDeclared:
			d.Status, d.Note = KeyDeclared, "the bundle declares it approved (export --accept-new-publisher-key)"
		default:
			d.Status, d.Note = KeyUnknown, "not compared with the store's keys"
		}
		return
	}
	hasPublisher := known.HasTier(dist.TrustPublisher)
	switch {
	case known.Find(fp) != nil:
		d.Status, d.Note = KeyPinned, "the namespace has this key"
		if k := known.Find(fp); d.Expires != nil && (k.Expires == nil || d.Expires.After(*k.Expires)) {
			d.Note = "the namespace has this key (re-published with a later expiry)"
		}
	case dist.SiteKeyed(d.Trust) && !hasPublisher:
		d.Status, d.Note = KeySiteResigned, "re-signed by the site key; the namespace has no publisher key"
	case d.Trust == dist.TrustPublisher && !hasPublisher:
		d.Status, d.Note = KeyFirstUse, "the namespace's first publisher key: pinned from this import on (trust on first use)"
		pin(dist.PinFirstUse)
	case approved():
	case dist.SiteKeyed(d.Trust):
		d.Status, d.Note = KeyRefused, "a downgrade: the namespace's providers are signed by its publisher, this one only re-signed by the site key"
	default:
		d.Status, d.Note = KeyRefused, "a new key for a namespace that has another"
	}
}

func (kr *KeyReview) accepts(fp string) bool {
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
	// Decisions is what Check decided, for the import's report (set by
	// Check; meaningful once the import has committed).
	Decisions []KeyDecision
}

// Check implements Policy: it refuses a bundle with any provider whose key
// is refused, naming each namespace with its old and new keys, and records
// the keys the import accepts (and, once, the keys of the store's
// namespaces that have no row yet).
func (kp *KeyPins) Check(in *PolicyInput, out *PolicyResult) error {
	hist, seeded, err := History(in.Root, in.Index)
	if err != nil {
		return err
	}
	kr := &KeyReview{History: map[string]*dist.NamespaceKeys{}, Pins: kp.Pins, Accept: kp.Accept, Bundle: in.Bundle, Now: in.Now}
	for i := range hist {
		kr.History[hist[i].Namespace] = &hist[i]
	}
	ds := kr.Evaluate(in.Manifest, in.Checked)
	kp.Decisions = ds
	if err := unusedAccepts(kp.Accept, ds); err != nil {
		return err
	}
	if err := refusals(ds); err != nil {
		return err
	}
	var pins []dist.KeyPin
	var expiries []KeyDecision
	for _, d := range ds {
		if d.Status == KeyUnknown {
			return fmt.Errorf("provider %s: its SHA256SUMS signature was not checked, so its publisher key cannot be decided", d.Provider)
		}
		if d.Pin != nil {
			pins = append(pins, *d.Pin)
		} else if d.Status == KeyPinned && d.Expires != nil {
			expiries = append(expiries, d)
		}
	}
	if len(pins) == 0 && !newerExpiry(hist, expiries) && (len(seeded) == 0 || imported(in.Index, in.Bundle)) {
		// Nothing new; the keys of a store that predates pins are
		// recorded by the first import that changes the store (a bundle
		// imported again changes nothing).
		return nil
	}
	out.Record(func(ix *Index) {
		ix.PublisherKeys = mergePins(ix.PublisherKeys, seeded, ds)
	})
	return nil
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
// of the bundle: a typo would otherwise approve nothing, silently.
func unusedAccepts(accept []string, ds []KeyDecision) error {
	for _, fp := range accept {
		used := false
		for _, d := range ds {
			used = used || d.Signer.Fingerprint == fp
		}
		if !used {
			return fmt.Errorf("%w: --accept-publisher-key %s: no provider of the bundle is signed by that key\nhint: 'airgap verify' lists each provider's key; give the fingerprint of the one to approve", ErrPublisherKey, fp)
		}
	}
	return nil
}

// refusals is the error for every refused decision, one paragraph per
// namespace and key, or nil.
func refusals(ds []KeyDecision) error {
	type group struct {
		d         KeyDecision
		providers []string
	}
	var order []string
	groups := map[string]*group{}
	for _, d := range ds {
		if !Refused(d.Status) {
			continue
		}
		k := d.Namespace + " " + d.Signer.Fingerprint
		if groups[k] == nil {
			groups[k] = &group{d: d}
			order = append(order, k)
		}
		groups[k].providers = append(groups[k].providers, d.Provider)
	}
	if len(order) == 0 {
		return nil
	}
	var b strings.Builder
	fps := []string{}
	for i, k := range order {
		g := groups[k]
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "namespace %s: %s signed by %s, new for the namespace (%s)\n  the store has accepted: %s",
			g.d.Namespace, strings.Join(g.providers, ", "), describeKey(g.d.Signer.Fingerprint, g.d.Signer.Identity), g.d.Note, describePins(g.d.Known))
		fps = append(fps, g.d.Signer.Fingerprint)
	}
	hint := "check the new fingerprint with the publisher itself (not with the bundle); if it is theirs, import again with --accept-publisher-key " +
		strings.Join(fps, " --accept-publisher-key ") + ", or have the bundle exported with --accept-new-publisher-key; if not, do not import this bundle"
	if groups[order[0]].d.Status == KeyNotInPinsFile {
		hint = "the site's pins file does not allow this key: if the publisher really changed its key, add the new fingerprint to the pins file"
	}
	return fmt.Errorf("%w:\n%s\nhint: %s", ErrPublisherKey, dist.PrintableLines(b.String()), hint)
}

// describeKey names a key for messages: fingerprint and identity.
func describeKey(fp, identity string) string {
	if identity == "" {
		return "key " + fp
	}
	return fmt.Sprintf("key %s (%s)", fp, dist.Printable(identity))
}

func describePins(ks []dist.KeyPin) string {
	if len(ks) == 0 {
		return "no key"
	}
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s since %s (%s)", describeKey(k.Fingerprint, k.Identity), k.Accepted.UTC().Format("2006-01-02"), strings.ReplaceAll(k.How, "_", " ")))
	}
	return strings.Join(parts, "; ")
}

// newerExpiry reports whether a pinned key's copy in the bundle expires
// later than the store recorded (a key re-published with a new expiry).
func newerExpiry(hist []dist.NamespaceKeys, ds []KeyDecision) bool {
	byNS := make(map[string]*dist.NamespaceKeys, len(hist))
	for i := range hist {
		byNS[hist[i].Namespace] = &hist[i]
	}
	for _, d := range ds {
		if n := byNS[d.Namespace]; n != nil {
			if k := n.Find(d.Signer.Fingerprint); k != nil && (k.Expires == nil || d.Expires.After(*k.Expires)) {
				return true
			}
		}
	}
	return false
}

// mergePins adds the seeded rows and the decisions' new pins and later
// expiries to the index's pins; namespaces stay sorted, keys in the order
// they were accepted.
func mergePins(have, seeded []dist.NamespaceKeys, ds []KeyDecision) []dist.NamespaceKeys {
	byNS := map[string]*dist.NamespaceKeys{}
	out := append([]dist.NamespaceKeys(nil), have...)
	out = append(out, seeded...)
	for i := range out {
		out[i].Keys = append([]dist.KeyPin(nil), out[i].Keys...)
	}
	for i := range out {
		byNS[out[i].Namespace] = &out[i]
	}
	for _, d := range ds {
		n := byNS[d.Namespace]
		switch {
		case d.Pin != nil && n == nil:
			out = append(out, dist.NamespaceKeys{Namespace: d.Namespace, Keys: []dist.KeyPin{*d.Pin}})
			byNS = nil // out moved: rebuild
		case d.Pin != nil && n.Find(d.Pin.Fingerprint) == nil:
			n.Keys = append(n.Keys, *d.Pin)
		case d.Status == KeyPinned && d.Expires != nil && n != nil:
			if k := n.Find(d.Signer.Fingerprint); k != nil && (k.Expires == nil || d.Expires.After(*k.Expires)) {
				e := *d.Expires
				k.Expires = &e
			}
		}
		if byNS == nil {
			byNS = map[string]*dist.NamespaceKeys{}
			for i := range out {
				byNS[out[i].Namespace] = &out[i]
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

// History is the publisher-key history of the store at root: the index's
// rows, plus, for each namespace of the catalog that has none (a store
// that predates pins), the keys its providers were signed by, read from
// the store's SHA256SUMS and signatures (seeded, how: in_store_before_pins;
// the import that records them is the first to pin). A provider whose
// signature no longer checks out is left out of seeding ('airgap
// inventory' says so). Cost: one signature check per provider version of
// the unrecorded namespaces, each distinct key set parsed once.
func History(root string, ix *Index) (hist, seeded []dist.NamespaceKeys, err error) {
	rows := map[string]bool{}
	for _, n := range ix.PublisherKeys {
		rows[n.Namespace] = true
	}
	since := time.Time{}
	if len(ix.Imports) > 0 {
		since = ix.Imports[len(ix.Imports)-1].Time
	}
	byNS := map[string]*dist.NamespaceKeys{}
	keyrings := bundle.KeyringCache{}
	for _, p := range ix.Catalog.Providers {
		ns := p.NamespaceKey()
		if rows[ns] {
			continue
		}
		c, ok := storedSigner(root, p, keyrings)
		if !ok {
			continue
		}
		n := byNS[ns]
		if n == nil {
			n = &dist.NamespaceKeys{Namespace: ns}
			byNS[ns] = n
		}
		if n.Find(c.Signer.Fingerprint) == nil {
			k := dist.KeyPin{Fingerprint: c.Signer.Fingerprint, KeyID: c.Signer.KeyID, Identity: c.Signer.Identity,
				Tier: bundle.Trust(p), Accepted: since, How: dist.PinExisting}
			if !c.KeyExpires.IsZero() {
				e := c.KeyExpires.UTC()
				k.Expires = &e
			}
			n.Keys = append(n.Keys, k)
		}
	}
	for _, n := range byNS {
		// A namespace whose only providers are site re-signed has no
		// publisher key to pin (see the policy above).
		if n.HasTier(dist.TrustPublisher) {
			seeded = append(seeded, *n)
		}
	}
	sort.Slice(seeded, func(i, j int) bool { return seeded[i].Namespace < seeded[j].Namespace })
	hist = append(append([]dist.NamespaceKeys(nil), ix.PublisherKeys...), seeded...)
	sort.Slice(hist, func(i, j int) bool { return hist[i].Namespace < hist[j].Namespace })
	return hist, seeded, nil
}

// storedSigner checks p's SHA256SUMS signature from the store's blobs.
func storedSigner(root string, p dist.ProviderVersion, keyrings bundle.KeyringCache) (verify.Checked, bool) {
	sums, err1 := readBlob(root, p.Shasums, dist.MaxShasumsSize)
	sig, err2 := readBlob(root, p.ShasumsSig, bundle.MaxSignatureSize)
	if err1 != nil || err2 != nil {
		return verify.Checked{}, false
	}
	kr, err := keyrings.Keyring(p)
	if err != nil {
		return verify.Checked{}, false
	}
	c, err := verify.CheckSignature(kr, bytes.NewReader(sums), sig)
	return c, err == nil
}
