package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// MaxInventorySize bounds an 'airgap inventory --json' document read back
// on the connected side (export --have) or at the transfer station (verify
// --against): about 80 bytes per blob, so over three million blobs.
const MaxInventorySize = 256 << 20

// Against is what 'airgap verify --against' reads of an inventory: the
// catalog without its signing keys (the bulk of the document), the
// withdrawals and the publisher-key history. ParseAgainst streams the
// document (one catalog entry at a time; the blob list and the import
// history are skipped token by token), so reading it holds only these
// fields, never the document: a 245 MiB inventory of 300,000 provider
// versions took 4 s of CPU and 480 MiB of memory at its peak (measured
// with verify --against on the 2-core machine); one over MaxInventorySize
// is refused before it is read.
type Against struct {
	Path          string
	Digest        verify.Digest // sha256 of the file (an approval records it)
	Format        int
	Catalog       dist.Catalog // providers without their signing keys
	Withdrawn     []Withdrawn
	PublisherKeys []dist.NamespaceKeys
	// Policy is the store's import policy (nil: an inventory printed by
	// an airgap that did not carry it, whose forecast applies no policy
	// beyond withdrawals, conflicts and pins, and says so).
	Policy      *StorePolicy
	Signers     []VersionSigner
	RevokedKeys []RevokedKey
}

// againstProvider is dist.ProviderVersion without its signing keys: every
// other field is read as the store wrote it (its trust tier, mirror hashes
// and all), so that the import's rules see in the forecast what they see
// in the store; the keys (their armor is the bulk of an inventory) are
// skipped, as the rules do not read them.
type againstProvider struct {
	dist.ProviderVersion
	SigningKeys skippedJSON `json:"signing_keys"` // shadows ProviderVersion.SigningKeys
}

// skippedJSON is a value read and dropped.
type skippedJSON struct{}

func (*skippedJSON) UnmarshalJSON([]byte) error { return nil }

// ReadAgainst reads an inventory for --against.
func ReadAgainst(path string) (*Against, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--against: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxInventorySize {
		return nil, fmt.Errorf("--against %s: %d bytes, over the %d-byte limit of an inventory", path, fi.Size(), MaxInventorySize)
	}
	h := sha256.New()
	a, err := ParseAgainst(io.TeeReader(f, h))
	if err != nil {
		return nil, fmt.Errorf("--against %s: %w\nhint: --against takes what 'airgap inventory --store DIR --json' printed on the offline side", path, err)
	}
	a.Path, a.Digest = path, verify.FromHash(h)
	return a, nil
}

// inventoryJSON bounds an inventory read back (verify --against): at most
// MaxInventorySize bytes, values nested at most 16 deep (the document
// nests 9: itself, catalog, providers, a provider, packages, a package,
// gates, a result, its findings).
var inventoryJSON = dist.JSONLimit{MaxBytes: MaxInventorySize, MaxDepth: 16}

// ParseAgainst reads and checks an inventory document (untrusted: it
// crossed the gap on a stick): within inventoryJSON, an index format this
// airgap reads, every catalog name valid (dist.Catalog.Validate), every
// withdrawal and publisher key well-formed. Strings from it reach the
// terminal only through dist.Printable.
func ParseAgainst(r io.Reader) (*Against, error) {
	js := inventoryJSON.Stream(r)
	a := &Against{}
	err := js.Object(func(key string) error {
		switch key {
		case "format":
			return js.Decode(&a.Format)
		case "catalog":
			return js.Object(func(key string) error {
				switch key {
				case "providers":
					return js.Array(func() error {
						var p againstProvider
						if err := js.Decode(&p); err != nil {
							return err
						}
						a.Catalog.Providers = append(a.Catalog.Providers, p.ProviderVersion)
						return nil
					})
				case "modules":
					return js.Array(func() error {
						var m dist.ModuleVersion
						if err := js.Decode(&m); err != nil {
							return err
						}
						a.Catalog.Modules = append(a.Catalog.Modules, m)
						return nil
					})
				case "releases":
					return js.Array(func() error {
						var r dist.CLIRelease
						if err := js.Decode(&r); err != nil {
							return err
						}
						a.Catalog.Releases = append(a.Catalog.Releases, r)
						return nil
					})
				}
				return js.Skip()
			})
		case "withdrawn":
			return js.Decode(&a.Withdrawn)
		case "publisher_keys":
			return js.Decode(&a.PublisherKeys)
		case "policy":
			return js.Decode(&a.Policy)
		case "signers":
			return js.Decode(&a.Signers)
		case "revoked_keys":
			return js.Decode(&a.RevokedKeys)
		}
		return js.Skip()
	})
	if err == nil {
		err = js.End()
	}
	if errors.Is(err, dist.ErrJSONTooLarge) {
		return nil, fmt.Errorf("larger than %d bytes", MaxInventorySize)
	}
	if err != nil {
		return nil, fmt.Errorf("not an 'airgap inventory --json' document: %v", err)
	}
	return a, a.validate()
}

// validate checks what ParseAgainst read.
func (a *Against) validate() error {
	if a.Format < minIndexFormat || a.Format > IndexFormat {
		return fmt.Errorf("inventory format %d; this airgap reads %d to %d", a.Format, minIndexFormat, IndexFormat)
	}
	if err := a.Catalog.Validate(nil); err != nil {
		return fmt.Errorf("its catalog: %v", err)
	}
	for _, w := range a.Withdrawn {
		if err := (dist.Withdrawal{Kind: w.Kind, Addr: w.Addr, Versions: []string{w.Version}, Reason: "x"}).Validate(); err != nil {
			return fmt.Errorf("its withdrawals: %v", err)
		}
	}
	for _, n := range a.PublisherKeys {
		host, ns, ok := strings.Cut(n.Namespace, "/")
		if !ok || !dist.ValidHost(host) || !dist.ValidProviderName(ns) {
			return fmt.Errorf("its publisher keys: %q is not a namespace", dist.Printable(n.Namespace))
		}
		for _, k := range n.Keys {
			if fp, err := verify.ParseFingerprint(k.Fingerprint); err != nil || fp != k.Fingerprint {
				return fmt.Errorf("its publisher keys: %q is not a fingerprint", dist.Printable(k.Fingerprint))
			}
		}
	}
	for _, r := range a.RevokedKeys {
		if fp, err := verify.ParseFingerprint(r.Fingerprint); err != nil || fp != r.Fingerprint {
			return fmt.Errorf("its revoked keys: %q is not a fingerprint", dist.Printable(r.Fingerprint))
		}
	}
	if a.Policy != nil {
		if err := a.Policy.load(); err != nil {
			return fmt.Errorf("its import policy: %v", err)
		}
	}
	return nil
}

// history is the inventory's key history by namespace, and the namespaces
// whose keys it does not tell (it has publisher-signed providers there but
// no history: an inventory from an airgap that did not pin).
func (a *Against) history() (map[string]*dist.NamespaceKeys, map[string]bool) {
	h := map[string]*dist.NamespaceKeys{}
	for i := range a.PublisherKeys {
		h[a.PublisherKeys[i].Namespace] = &a.PublisherKeys[i]
	}
	unknown := map[string]bool{}
	for _, p := range a.Catalog.Providers {
		if ns := dist.NamespaceKey(p.Host, p.Namespace); h[ns] == nil && p.Trust() == dist.TrustPublisher {
			unknown[ns] = true
		}
	}
	return h, unknown
}

// ReviewOptions say what the offline side has, for Review.
type ReviewOptions struct {
	Against *Against  // the store's inventory, or nil
	Pins    *PinsFile // the site's pins file, or nil
	Now     time.Time
	// What an import would also be given, for the forecast: its flags
	// (Extra.Pins is Pins), the approval files that come with the bundle,
	// an approval being made ('airgap approve') and the site keys.
	Extra     Extra
	Approvals []approval.File
	Pending   *approval.Statement
	SiteKeys  openpgp.EntityList
}

// Review adds to a checked report (report.Check) what the offline side
// will make of the bundle: each provider's publisher-key status, the keys
// per namespace, and, with an inventory, the import's forecast (Forecast:
// the import's own rules over the inventory, whose key decisions are the
// statuses shown) and the difference the import makes. What needs a
// person's look becomes an attention item.
func Review(rep *report.Report, opt ReviewOptions) error {
	m := rep.Manifest()
	if m == nil || rep.Checks == nil {
		return nil
	}
	var ds []KeyDecision
	var kr *keyReview
	var refused []Refusal
	if opt.Against != nil {
		fc, err := forecast(rep, opt)
		if err != nil {
			return err
		}
		ds, kr, refused = fc.keys.Decisions, fc.keys.last, fc.refusals
	} else {
		kr = &keyReview{Pins: opt.Pins, Now: opt.Now, Bundle: verify.Digest(rep.Bundle), Accept: opt.Extra.Accept}
		if opt.Pending != nil {
			kr.Station = opt.Pending.PublisherKeys
		}
		ds = kr.Evaluate(m, rep.Checks)
		// Without an inventory, no forecast: the pins file's refusals of
		// releases are shown as attention items, as the providers' are.
		for _, r := range m.Catalog.Releases {
			if _, why := releasePinned(opt.Pins, r); why != "" {
				rep.AddAttention(report.AttentionKeyRefused, "release "+r.String(), "import will refuse release "+r.String()+": "+why)
			}
		}
	}
	for i, d := range ds {
		rep.Providers[i].KeyStatus, rep.Providers[i].KeyNote = d.Status, d.Note
	}
	rep.PublisherKeys = namespaceReviews(ds, kr)
	keyAttention(rep, ds)
	if opt.Against != nil {
		rep.Against = diff(rep, m, opt.Against, refused)
	}
	return nil
}

// namespaceReviews groups the decisions by namespace and signing key.
func namespaceReviews(ds []KeyDecision, kr *keyReview) []report.NamespaceReview {
	var out []report.NamespaceReview
	idx := map[string]int{}
	for _, d := range ds {
		if d.Signer.Fingerprint == "" {
			continue
		}
		i, ok := idx[d.Namespace]
		if !ok {
			n := report.NamespaceReview{Namespace: d.Namespace}
			if h := kr.History[d.Namespace]; h != nil && !kr.Unknown[d.Namespace] {
				n.History = append([]dist.KeyPin(nil), h.Keys...)
			}
			out = append(out, n)
			i = len(out) - 1
			idx[d.Namespace] = i
		}
		n := &out[i]
		j := -1
		for k := range n.InBundle {
			if n.InBundle[k].Fingerprint == d.Signer.Fingerprint {
				j = k
			}
		}
		if j < 0 {
			n.InBundle = append(n.InBundle, report.BundleKey{Fingerprint: d.Signer.Fingerprint, KeyID: d.Signer.KeyID, Identity: d.Signer.Identity, Trust: d.Trust, Status: d.Status})
			j = len(n.InBundle) - 1
		}
		n.InBundle[j].Providers = append(n.InBundle[j].Providers, d.Provider)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

// keyAttention makes attention items of new and refused keys, once per
// namespace and key.
func keyAttention(rep *report.Report, ds []KeyDecision) {
	for _, d := range ds {
		subject := d.Namespace + " " + d.Signer.Fingerprint
		key := describeKey(d.Signer.Fingerprint, d.Signer.Identity)
		switch d.Status {
		case keyRefused, keyNotInPinsFile, keyRetired, keyRevoked:
			rep.AddAttention(report.AttentionKeyRefused, subject, fmt.Sprintf("import will refuse %s: %s, which signs it, is not accepted for %s (%s); the namespace has %s",
				d.Provider, key, d.Namespace, d.Note, describePins(d.Known)))
		case keyFirstUse:
			rep.AddAttention(report.AttentionNewKey, subject, fmt.Sprintf("%s is the first publisher key of %s: the import will pin it (trust on first use); check its fingerprint with the publisher", key, d.Namespace))
		case keyDeclared, keyAccepted, keyStation:
			had := ""
			if d.Known != nil {
				had = "; the namespace has " + describePins(d.Known)
			}
			rep.AddAttention(report.AttentionNewKey, subject, fmt.Sprintf("%s is a new publisher key for %s, approved by %s%s; check its fingerprint with the publisher", key, d.Namespace, approvedBy(d.Status), had))
		}
	}
}

func approvedBy(status string) string {
	switch status {
	case keyAccepted:
		return "--accept-publisher-key"
	case keyStation:
		return "a transfer station's signed approval of this bundle"
	}
	return "the bundle's signed declaration (export --accept-new-publisher-key)"
}

// diff is the difference the bundle makes to the inventory's store; an
// entry the forecast refuses is listed as refused only, with every reason.
func diff(rep *report.Report, m *bundle.Manifest, a *Against, refused []Refusal) *report.Against {
	cat := &a.Catalog
	out := &report.Against{Inventory: a.Path, StoreProviders: len(cat.Providers), StoreModules: len(cat.Modules)}
	provs, mods := versionMaps(cat)
	d := &differ{rep: rep, out: out, withdrawn: withdrawnNotLifted(a.Withdrawn, m), reasons: map[string][]Refusal{}}
	for _, r := range refused {
		if r.Kind != "" {
			k := r.Kind + " " + dist.VersionKey(r.Address, r.Version)
			d.reasons[k] = append(d.reasons[k], r)
		}
	}
	for i, p := range m.Catalog.Providers {
		item := report.DiffItem{Kind: dist.KindProvider, Address: p.Addr(), Version: p.Version}
		old := provs[p.Key()]
		if st, refused := d.refused(item, "provider "+p.String(), p.Key(), old == nil); refused {
			rep.Providers[i].InStore = st
			continue
		}
		rep.Providers[i].InStore = d.provider(item, p, old)
	}
	for i, mv := range m.Catalog.Modules {
		item := report.DiffItem{Kind: dist.KindModule, Address: mv.Addr(), Version: mv.Version}
		old := mods[mv.Key()]
		if st, refused := d.refused(item, "module "+mv.String(), mv.Key(), old == nil); refused {
			rep.Modules[i].InStore = st
			continue
		}
		if old == nil {
			out.Added = append(out.Added, item)
			rep.Modules[i].InStore = "new"
		} else {
			item.Note = updatesNote(moduleUpdates(*old, mv))
			out.AlreadyPresent = append(out.AlreadyPresent, item)
			rep.Modules[i].InStore = "present"
		}
	}
	out.Withdrawn, out.Reinstated = withdrawalDiff(m, provs, mods, a.Withdrawn)
	out.KeyChanges = keyChanges(rep.PublisherKeys)
	if _, unknown := a.history(); len(unknown) > 0 {
		var ns []string
		for n := range unknown {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		out.KeysUnknownNotes = append(out.KeysUnknownNotes, "the inventory does not say which keys the store has for "+strings.Join(ns, ", ")+
			" (it was printed by an airgap that did not pin publisher keys); key changes there are not shown")
	}
	return out
}

// differ sorts the bundle's versions into the difference's lists.
type differ struct {
	rep       *report.Report
	out       *report.Against
	withdrawn map[string]*Withdrawn // the store's, not lifted by the bundle
	reasons   map[string][]Refusal  // the forecast's, by kind and version key
}

// refused records a version the import would refuse (by any rule of the
// forecast), with every reason, and says so in the attention list when it
// is withdrawn in the store or conflicts with it (a key refusal has its
// own item); it returns the version's in_store status.
func (d *differ) refused(item report.DiffItem, what, key string, isNew bool) (string, bool) {
	rs := d.reasons[item.Kind+" "+key]
	if len(rs) == 0 {
		return "", false
	}
	var notes []string
	for _, r := range rs {
		notes = append(notes, strings.ReplaceAll(r.Rule, "_", " ")+": "+r.Reason)
		switch r.Rule {
		case ruleWithdrawn:
			reason := r.Reason
			if w := d.withdrawn[key]; w != nil {
				reason = w.Reason
			}
			d.rep.AddAttention(report.AttentionWithdrawn, what, "import will refuse the bundle: it carries "+what+", which the store withdrew: "+reason)
		case ruleConflict:
			d.rep.AddAttention(report.AttentionConflict, what, "import will refuse the bundle: "+r.Reason)
		}
	}
	item.Note = strings.Join(notes, "; ")
	d.out.Refused = append(d.out.Refused, item)
	switch {
	case d.withdrawn[key] != nil:
		return "withdrawn", true
	case isNew:
		return "new", true
	}
	return "present", true
}

// provider files a provider version the import accepts: new, new
// platforms of a version the store has, or present.
func (d *differ) provider(item report.DiffItem, p dist.ProviderVersion, old *dist.ProviderVersion) string {
	var newPlats, havePlats []string
	for _, pk := range p.Packages {
		have := false
		if old != nil {
			_, have = old.Package(pk.OS, pk.Arch)
		}
		if have {
			havePlats = append(havePlats, pk.Platform())
		} else {
			newPlats = append(newPlats, pk.Platform())
		}
	}
	switch {
	case old == nil:
		item.Platforms = newPlats
		d.out.Added = append(d.out.Added, item)
		return "new"
	case len(newPlats) > 0:
		item.Platforms, item.Note = newPlats, "new platforms of a version the store has"
		d.out.Added = append(d.out.Added, item)
		return "new_platforms"
	}
	item.Platforms = havePlats
	item.Note = updatesNote(providerUpdates(*old, p))
	d.out.AlreadyPresent = append(d.out.AlreadyPresent, item)
	return "present"
}

// updatesNote is the note of an already present version that the import
// still changes (what dist.Catalog.Merge takes from the bundle), "" if it
// changes nothing.
func updatesNote(what []string) string {
	if len(what) == 0 {
		return ""
	}
	return "the import updates its " + strings.Join(what, ", ")
}

// providerUpdates is what the import takes from a bundle's copy (p) of a
// provider version the store has (old), platforms aside: its trust, its
// SHA256SUMS signature, its docs, and per package new gate results and
// Go build information.
func providerUpdates(old, p dist.ProviderVersion) []string {
	var out []string
	if old.Trust() != p.Trust() {
		out = append(out, "trust (now "+dist.TrustLabel(p.Trust())+"; it was "+dist.TrustLabel(old.Trust())+")")
	}
	if p.ShasumsSig != "" && p.ShasumsSig != old.ShasumsSig {
		out = append(out, "SHA256SUMS signature")
	}
	if p.Docs != nil && p.Docs.Archive != "" && (old.Docs == nil || old.Docs.Archive != p.Docs.Archive) {
		out = append(out, "documentation")
	}
	var gates []string
	seen, build := map[string]bool{}, false
	for _, pk := range p.Packages {
		prev, ok := old.Package(pk.OS, pk.Arch)
		if !ok || prev.Digest != pk.Digest {
			continue
		}
		for _, g := range newGateResults(prev.Gates, pk.Gates) {
			if !seen[g] {
				seen[g] = true
				gates = append(gates, g)
			}
		}
		build = build || prev.BuildInfo == "" && pk.BuildInfo != ""
	}
	if len(gates) > 0 {
		out = append(out, "gate results ("+strings.Join(gates, ", ")+")")
	}
	if build {
		out = append(out, "Go build information")
	}
	return out
}

// moduleUpdates is what the import takes from a bundle's copy (mv) of a
// module version the store has (old): its docs and new gate results.
func moduleUpdates(old, mv dist.ModuleVersion) []string {
	var out []string
	if mv.Docs != "" && mv.Docs != old.Docs {
		out = append(out, "documentation")
	}
	if gs := newGateResults(old.Gates, mv.Gates); len(gs) > 0 {
		out = append(out, "gate results ("+strings.Join(gs, ", ")+")")
	}
	return out
}

// newGateResults names the gates of newer whose result the store does not
// have (older): a gate not run before, or a different report.
func newGateResults(older, newer []dist.GateResult) []string {
	var out []string
	for _, n := range newer {
		same := false
		for _, o := range older {
			same = same || o.Gate == n.Gate && o.Report == n.Report
		}
		if !same {
			out = append(out, n.Gate)
		}
	}
	return out
}

// withdrawnNotLifted is the store's withdrawn versions (by key) that m
// does not reinstate.
func withdrawnNotLifted(ws []Withdrawn, m *bundle.Manifest) map[string]*Withdrawn {
	lifted := map[string]bool{}
	for _, r := range m.Reinstate {
		for _, k := range r.Keys() {
			lifted[k] = true
		}
	}
	out := map[string]*Withdrawn{}
	for i := range ws {
		if !lifted[ws[i].Key()] {
			out[ws[i].Key()] = &ws[i]
		}
	}
	return out
}

// withdrawalDiff lists what the bundle's withdraw list takes out of the
// store (or keeps out, for versions it does not have), and which of the
// store's withdrawals its reinstate list lifts.
func withdrawalDiff(m *bundle.Manifest, provs map[string]*dist.ProviderVersion, mods map[string]*dist.ModuleVersion, ws []Withdrawn) (withdrawn, reinstated []report.DiffItem) {
	for _, w := range m.Withdraw {
		for _, v := range w.Versions {
			k := dist.VersionKey(w.Addr, v)
			note := "served now: the import takes it out"
			if provs[k] == nil && mods[k] == nil {
				note = "not in the store: the import keeps it out"
			}
			withdrawn = append(withdrawn, report.DiffItem{Kind: w.Kind, Address: w.Addr, Version: v, Note: note + " (" + w.Reason + ")"})
		}
	}
	had := map[string]bool{}
	for _, w := range ws {
		had[w.Key()] = true
	}
	for _, r := range m.Reinstate {
		for _, v := range r.Versions {
			note := "the store had not withdrawn it"
			if had[dist.VersionKey(r.Addr, v)] {
				note = "lifts the store's withdrawal"
			}
			reinstated = append(reinstated, report.DiffItem{Kind: r.Kind, Address: r.Addr, Version: v, Note: note + " (" + r.Reason + ")"})
		}
	}
	return withdrawn, reinstated
}

// keyChanges lists, per namespace, the bundle's keys that are new for it.
func keyChanges(ns []report.NamespaceReview) []report.KeyChange {
	var out []report.KeyChange
	for _, n := range ns {
		for _, k := range n.InBundle {
			switch k.Status {
			case keyPinned, keySiteResigned, keyUnknown:
				continue
			}
			out = append(out, report.KeyChange{Namespace: n.Namespace, Before: n.History, Key: k})
		}
	}
	return out
}
