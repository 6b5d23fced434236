package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Inventory is the JSON 'airgap inventory --json' prints, and what
// 'airgap export --have' and 'airgap verify --against' read back: the
// index, every blob present and the store's import policy (import.hcl,
// with the station keyring's public keys and the pins file's namespaces:
// StorePolicy), so that verify can forecast the import by its rules.
type Inventory struct {
	Index
	Blobs  []verify.Digest `json:"blobs"`
	Policy *StorePolicy    `json:"policy"`
	// PolicyErr: import.hcl could not be read (every import fails on it).
	PolicyErr error `json:"-"`
}

// LoadInventory reads the inventory of the store at root. Its
// PublisherKeys is the store's whole key history (History): the recorded
// rows, and for a store that predates pins the keys its providers were
// signed by.
//
// A store set up for its first import (its import.hcl written, no index
// yet) has an empty inventory with its policy: what verify --against and
// approve --against need to forecast the first bundle by the store's own
// rules. A directory with neither is not a store (ErrNoStore).
func LoadInventory(root string) (*Inventory, error) {
	ix, blobs, err := ReadInventory(root)
	if errors.Is(err, ErrNoStore) && configured(root) {
		ix, err = readIndex(root)
		if err == nil {
			ix.Imports, blobs = []ImportEntry{}, []verify.Digest{}
		}
	}
	if err != nil {
		return nil, err
	}
	if ix.PublisherKeys, _, err = History(root, ix); err != nil {
		return nil, err
	}
	backfillSigners(root, ix)
	inv := &Inventory{Index: *ix, Blobs: blobs}
	inv.Policy, inv.PolicyErr = ReadStorePolicy(root)
	return inv, nil
}

// WriteText prints the inventory for people: providers with their
// platforms, modules, and the import history.
func (inv *Inventory) WriteText(out io.Writer, root string) {
	// Addresses, versions, sources, reasons and signers come from bundles
	// and registries: each is escaped on its own (q), so none can forge a
	// line, and the whole text once more on the way to the terminal.
	q := dist.Printable
	var w strings.Builder
	defer func() { io.WriteString(out, dist.PrintableLines(w.String())) }()
	ix := &inv.Index
	fmt.Fprintf(&w, "store %s: %d provider versions, %d module versions, %d blobs\n", root, len(ix.Catalog.Providers), len(ix.Catalog.Modules), len(inv.Blobs))
	switch sp := inv.Policy; {
	case inv.PolicyErr != nil:
		fmt.Fprintf(&w, "import rules (%s): unreadable: %v\n", ImportConfigName, firstLine(inv.PolicyErr.Error()))
	case sp != nil:
		for _, l := range sp.Lines() {
			fmt.Fprintf(&w, "import rules (%s): %s\n", ImportConfigName, l)
		}
	}
	fmt.Fprintf(&w, "\nProviders:\n")
	signers := SignersByVersion(ix.Signers)
	for _, p := range ix.Catalog.Providers {
		plats := make([]string, 0, len(p.Packages))
		for _, pk := range p.Packages {
			plats = append(plats, q(pk.Platform()))
		}
		signed := ""
		switch {
		case p.MirrorHashesOnly:
			signed = " (mirror hashes only, from " + p.Mirror + "; no publisher signature)"
		case p.SiteSigned:
			signed = " (re-signed by the site key)"
		}
		if note := keyNote(root, p, time.Now()); note != "" {
			signed += " " + note
		}
		fmt.Fprintf(&w, "  %-50s %-10s %s%s\n", q(p.Addr()), q(p.Version), strings.Join(plats, " "), q(signed))
		if s, ok := signers.Of(&p); ok {
			fmt.Fprintf(&w, "    signed %s by %s\n", s.Created.UTC().Format("2006-01-02"), keyName(s.Signer()))
		}
		for _, pk := range p.Packages {
			writeGates(&w, root, q(pk.Platform())+" ", pk.Gates)
		}
	}
	fmt.Fprintln(&w, "\nModules:")
	for _, m := range ix.Catalog.Modules {
		fmt.Fprintf(&w, "  %-50s %-10s %s\n", q(m.Addr()), q(m.Version), q(m.Source))
		for _, v := range m.Vendored {
			fmt.Fprintf(&w, "    vendored %s:%d %s -> %s (%s)\n", q(v.File), v.Line, q(v.Source), q(v.Path), v.Digest.Short())
		}
		writeGates(&w, root, "", m.Gates)
	}
	if len(ix.Catalog.Releases) > 0 {
		fmt.Fprintln(&w, "\nCLI releases (served under /releases/):")
		for _, r := range ix.Catalog.Releases {
			files := make([]string, 0, len(r.Builds))
			for _, b := range r.Builds {
				files = append(files, q(b.Filename))
			}
			pin := "airgap's pin"
			if r.KeyPin == dist.KeyPinManifest {
				pin = "the export manifest's publisher_key"
			}
			fmt.Fprintf(&w, "  %-50s %-10s %s\n    SHA256SUMS signed by key %s (%s)\n", q(r.Product), q(r.Version), strings.Join(files, " "), verify.GroupFingerprint(q(r.KeyFingerprint)), pin)
		}
	}
	writeKeyHistory(&w, ix.PublisherKeys)
	if len(ix.Withdrawn) > 0 {
		fmt.Fprintln(&w, "\nWithdrawn (not served; a bundle carrying one is refused unless it reinstates it):")
		for _, wd := range ix.Withdrawn {
			absent := ""
			if wd.Absent {
				absent = " (was not in the store)"
			}
			fmt.Fprintf(&w, "  %s %-50s %-10s withdrawn %s by bundle %s signer %s%s\n    reason: %s\n",
				q(string(wd.Kind)), q(wd.Addr), q(wd.Version), wd.Time.Format("2006-01-02T15:04:05Z"), wd.Bundle.Short(), verify.GroupFingerprint(q(wd.Signer.Fingerprint)), absent, q(wd.Reason))
		}
	}
	fmt.Fprintln(&w, "\nImported bundles:")
	if len(ix.Imports) == 0 {
		fmt.Fprintln(&w, "  none yet: the first bundle is imported by the import rules above ('airgap inventory --json' of this store lets 'airgap verify --against' forecast it)")
	}
	for _, e := range ix.Imports {
		kind := ""
		if e.Delta {
			kind = " delta"
		}
		fmt.Fprintf(&w, "  %s %s%s signer %s: %d blobs (%s) added, %s, %d trust changes\n",
			e.Time.Format("2006-01-02T15:04:05Z"), e.Bundle.Short(), kind, verify.GroupFingerprint(q(e.Signer.Fingerprint)), e.BlobsAdded, progress.Size(e.BytesAdded),
			catalogChanges(len(e.Added), len(e.Withdrew), len(e.Reinstated), len(e.Updated)), len(e.TrustChanges))
		for _, l := range e.Withdrew {
			fmt.Fprintln(&w, "    withdrew", q(l))
		}
		for _, l := range e.Reinstated {
			fmt.Fprintln(&w, "    reinstated", q(l))
		}
		for _, l := range e.Updated {
			fmt.Fprintln(&w, "    updated", q(l))
		}
		for _, c := range e.TrustChanges {
			fmt.Fprintln(&w, "    trust change:", q(c.String()))
		}
		for _, a := range e.Approvals {
			fmt.Fprintf(&w, "    %s\n", approvalLine(a))
		}
		if !e.Kept() {
			fmt.Fprintln(&w, "    its signed manifest is not kept (imported by an older airgap): exports to the next network cannot prove this hop; import the bundle again to keep it")
		} else if n := len(e.Custody); n > 0 {
			fmt.Fprintf(&w, "    came with a chain of custody (%d blobs: earlier bundles' signed manifests, signatures and keys)\n", n)
		}
	}
	if len(ix.RevokedKeys) > 0 {
		fmt.Fprintln(&w, "\nRevoked keys (they sign nothing new here, whatever a bundle's copy of the key says):")
		for _, r := range ix.RevokedKeys {
			fmt.Fprintf(&w, "  %s revoked %s (%s); seen %s in %s\n", keyName(verify.Signer{Fingerprint: r.Fingerprint, Identity: r.Identity}),
				r.Revoked.UTC().Format("2006-01-02"), q(orNoReason(r.Reason)), r.Recorded.UTC().Format("2006-01-02"), q(r.Source))
		}
	}
	if len(ix.KeyEvents) > 0 {
		fmt.Fprintln(&w, "\nKey retirements and revocations:")
		for _, e := range ix.KeyEvents {
			fmt.Fprintf(&w, "  %s\n", e.String())
		}
	}
	if len(ix.Maintenance) > 0 {
		fmt.Fprintln(&w, "\nPrune and gc runs:")
		for _, e := range ix.Maintenance {
			what := q(e.Action)
			if e.Policy != "" {
				what += " " + q(e.Policy)
			}
			temps := ""
			if e.TempsRemoved > 0 {
				temps = fmt.Sprintf(" and %d temporary files (%s)", e.TempsRemoved, progress.Size(e.TempBytes))
			}
			fmt.Fprintf(&w, "  %s %s: %d blobs (%s)%s removed\n", e.Time.Format("2006-01-02T15:04:05Z"), what, e.BlobsRemoved, progress.Size(e.BytesRemoved), temps)
			for _, l := range e.Removed {
				fmt.Fprintln(&w, "    removed", q(l))
			}
		}
	}
}

// writeGates lists an entry's gate results, each with the path of its
// report in the store.
func writeGates(w io.Writer, root, prefix string, rs []dist.GateResult) {
	for _, r := range rs {
		fmt.Fprintf(w, "    %sgate %s\n      report: %s\n      tool: %s\n", prefix, r.Summary(), BlobPath(root, r.Report), dist.Printable(r.Tool))
	}
}

// ImportReport is 'airgap import --json': what was added and what the store
// already had.
type ImportReport struct {
	OK          bool          `json:"ok"`
	File        string        `json:"file"`
	Bundle      verify.Digest `json:"bundle,omitempty"`
	Signer      verify.Signer `json:"signer"`
	Delta       bool          `json:"delta"`
	Unchanged   bool          `json:"unchanged"`
	Added       []string      `json:"added"`
	BlobsAdded  int           `json:"blobs_added"`
	BytesAdded  int64         `json:"bytes_added"`
	BlobsShared int           `json:"blobs_already_present"`
	// leftovers: temporary files an earlier, interrupted import left
	Cleaned      int      `json:"leftovers_removed"`
	CleanedBytes int64    `json:"leftover_bytes_removed"`
	Created      bool     `json:"store_created"`
	Withdrew     []string `json:"withdrew,omitempty"`
	Reinstated   []string `json:"reinstated,omitempty"`
	// Updated: what the bundle changed in entries the store already had
	// (gate results run over them since).
	Updated []string `json:"updated,omitempty"`
	// PinnedKeys are the publisher keys this import pinned for their
	// namespaces (first use, or an approved new key).
	PinnedKeys []PinnedKey `json:"publisher_keys_pinned"`
	// RequiredGates are the gates (import.hcl and --require-gate) every
	// entry of the bundle passed or had waived.
	RequiredGates []string `json:"required_gates"`
	// Approvals are the station approvals the import accepted (kept as
	// blobs); TrustChanges the versions the store had whose SHA256SUMS or
	// signature it replaced; RevokedKeys the revocations it now remembers.
	Approvals    []ApprovalRecord `json:"approvals"`
	TrustChanges []TrustChange    `json:"trust_changes"`
	RevokedKeys  []RevokedKey     `json:"revoked_keys"`
	// ChainHops: the hops of the bundle's chain of custody whose
	// signatures were checked again (0: a bundle from the registries);
	// ChainKeyring: the chain policy's keyring each was signed by a key of.
	ChainHops    int    `json:"chain_hops"`
	ChainKeyring string `json:"chain_keyring,omitempty"`
	// KeptCustody: the bundle was imported before, when the store did not
	// keep bundles' manifests; it now keeps this one's.
	KeptCustody bool `json:"kept_custody,omitempty"`
}

// PinnedKey is one key an import pinned.
type PinnedKey struct {
	Namespace string `json:"namespace"`
	dist.KeyPin
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Report turns the result into the JSON report.
func (r *ImportResult) Report(file string) ImportReport {
	added := r.Added
	if added == nil {
		added = []string{}
	}
	pinned := r.PinnedKeys
	if pinned == nil {
		pinned = []PinnedKey{}
	}
	gates := append([]string{}, r.RequiredGates...)
	return ImportReport{OK: true, File: file, Bundle: r.Bundle, Signer: r.Signer, Delta: r.Delta, Unchanged: r.Unchanged,
		Added: added, BlobsAdded: r.BlobsAdded, BytesAdded: r.BytesAdded, BlobsShared: r.BlobsShared, Cleaned: r.Cleaned,
		CleanedBytes: r.CleanedBytes, Created: r.Created, Withdrew: r.Withdrew, Reinstated: r.Reinstated, Updated: r.Updated, PinnedKeys: pinned,
		RequiredGates: gates, Approvals: append([]ApprovalRecord{}, r.Approvals...), TrustChanges: append([]TrustChange{}, r.TrustChanges...),
		RevokedKeys: append([]RevokedKey{}, r.Revoked...), ChainHops: r.ChainHops, ChainKeyring: r.ChainKeyring, KeptCustody: r.KeptCustody}
}

// WriteText prints the result for people; root is the store's directory.
func (r *ImportResult) WriteText(out io.Writer, root string) {
	var w strings.Builder
	defer func() {
		if len(r.RequiredGates) > 0 {
			fmt.Fprintf(&w, "  required gates, passed or waived on every entry: %s\n", dist.Printable(strings.Join(r.RequiredGates, ", ")))
		}
		io.WriteString(out, dist.PrintableLines(w.String()))
	}()
	if r.Created {
		fmt.Fprintf(&w, "created a new store in %s (there was none: if you meant an existing store, check --store)\n", absPath(root))
	}
	if r.Cleaned > 0 {
		fmt.Fprintf(&w, "removed %d temporary file(s) (%s) an interrupted import had left\n", r.Cleaned, human(r.CleanedBytes))
	}
	if r.Unchanged {
		fmt.Fprintf(&w, "already imported: bundle %s (signed by %s); nothing changed\n", r.Bundle.Short(), dist.Printable(r.Signer.String()))
		return
	}
	if r.KeptCustody {
		fmt.Fprintf(&w, "already imported: bundle %s (signed by %s); the catalog is unchanged, and the store now keeps its signed manifest for the chain of custody (it had imported it before airgap kept them)\n",
			r.Bundle.Short(), dist.Printable(r.Signer.String()))
		return
	}
	fmt.Fprintf(&w, "imported bundle %s\n  signed by: %s\n  new blobs: %d (%s); already present: %d\n  %s\n",
		r.Bundle.Short(), dist.Printable(r.Signer.String()), r.BlobsAdded, progress.Size(r.BytesAdded), r.BlobsShared,
		catalogChanges(len(r.Added), len(r.Withdrew), len(r.Reinstated), len(r.Updated)))
	if len(r.Added) == 0 && len(r.Withdrew) == 0 && len(r.Reinstated) == 0 && len(r.Updated) == 0 {
		fmt.Fprintln(&w, "  the catalog already had everything in this bundle")
	}
	if r.ChainHops > 0 {
		trusted := ""
		if r.ChainKeyring != "" {
			trusted = ", each signed by a key of the chain keyring " + r.ChainKeyring
		}
		fmt.Fprintf(&w, "  chain of custody: %d hop(s), every signature checked again%s\n", r.ChainHops, trusted)
	}
	for _, a := range r.Added {
		fmt.Fprintln(&w, "  added", dist.Printable(a))
	}
	for _, a := range r.Reinstated {
		fmt.Fprintln(&w, "  reinstated", dist.Printable(a))
	}
	for _, a := range r.Withdrew {
		fmt.Fprintln(&w, "  withdrew", dist.Printable(a))
	}
	for _, a := range r.Updated {
		fmt.Fprintln(&w, "  updated", dist.Printable(a))
	}
	for _, k := range r.PinnedKeys {
		fmt.Fprintf(&w, "  pinned publisher key for %s: %s\n", dist.Printable(k.Namespace), keyLine(k.KeyPin))
	}
	for _, c := range r.TrustChanges {
		fmt.Fprintf(&w, "  trust change: %s\n", dist.Printable(c.String()))
	}
	for _, a := range r.Approvals {
		fmt.Fprintf(&w, "  %s\n", approvalLine(a))
	}
	for _, k := range r.Revoked {
		fmt.Fprintf(&w, "  remembered the revocation of %s (revoked %s: %s); it signs nothing new here from now on\n",
			keyName(verify.Signer{Fingerprint: k.Fingerprint, Identity: k.Identity}), k.Revoked.UTC().Format("2006-01-02"), dist.Printable(orNoReason(k.Reason)))
	}
}

// approvalLine is one recorded approval for people.
func approvalLine(a ApprovalRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "approved at the transfer station by %s on %s (approval %s)", keyName(a.Station), a.Time.UTC().Format("2006-01-02 15:04Z"), a.Blob.Short())
	if a.Note != "" {
		fmt.Fprintf(&b, ": %q", dist.Printable(a.Note))
	}
	for _, k := range a.PublisherKeys {
		fmt.Fprintf(&b, "; accepted publisher key %s for %s", verify.GroupFingerprint(k.Fingerprint), dist.Printable(k.Namespace))
	}
	return b.String()
}

// writeKeyHistory prints each namespace's publisher keys, oldest first.
func writeKeyHistory(w io.Writer, hist []dist.NamespaceKeys) {
	if len(hist) == 0 {
		return
	}
	q := dist.Printable
	fmt.Fprintln(w, "\nPublisher keys (an import refuses a provider signed by a key its namespace has not had, unless approved):")
	for _, n := range hist {
		fmt.Fprintf(w, "  %s\n", q(n.Namespace))
		for _, k := range n.Keys {
			fmt.Fprintf(w, "    %s\n", keyLine(k))
		}
	}
}

// keyLine is one accepted key for people: fingerprint, identity, tier,
// since when, how and from which bundle, and expiry.
func keyLine(k dist.KeyPin) string {
	q := dist.Printable
	var b strings.Builder
	fmt.Fprintf(&b, "%s", verify.GroupFingerprint(q(k.Fingerprint)))
	if k.Identity != "" {
		fmt.Fprintf(&b, " %s", q(k.Identity))
	}
	if dist.SiteKeyed(k.Tier) {
		b.WriteString(" (site key, for re-signed providers)")
	}
	if !k.Accepted.IsZero() {
		fmt.Fprintf(&b, ", since %s", k.Accepted.UTC().Format("2006-01-02"))
	}
	fmt.Fprintf(&b, " (%s", strings.ReplaceAll(q(k.How), "_", " "))
	if k.Bundle != "" {
		fmt.Fprintf(&b, ", bundle %s", k.Bundle.Short())
	}
	b.WriteString(")")
	if k.Expires != nil {
		verb := "expires"
		if k.Expires.Before(time.Now()) {
			verb = "expired" // it still vouches for what it signed while valid
		}
		fmt.Fprintf(&b, ", %s %s", verb, k.Expires.UTC().Format("2006-01-02"))
	}
	if k.Retired != nil {
		fmt.Fprintf(&b, ", RETIRED %s (signs nothing new)", k.Retired.UTC().Format("2006-01-02"))
	}
	return b.String()
}

// catalogChanges says what an import changed in the catalog: versions and
// platforms added, withdrawn and reinstated are catalog changes, and
// updates to entries already present (gate results run over them since)
// are said beside them: "3 catalog changes (1 added, 2 withdrawn); 4
// updates to entries already present (gate results, docs)".
func catalogChanges(added, withdrew, reinstated, updated int) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{added, "added"}, {withdrew, "withdrawn"}, {reinstated, "reinstated"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	s := fmt.Sprintf("%d catalog changes", added+withdrew+reinstated)
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if updated > 0 {
		s += fmt.Sprintf("; %d updates to entries already present (gate results, docs)", updated)
	}
	return s
}

// ReadInventory reads the index and lists the blobs present.
func ReadInventory(root string) (*Index, []verify.Digest, error) {
	if _, err := os.Stat(indexPath(root)); err != nil {
		return nil, nil, fmt.Errorf("%w: %s has no %s\nhint: import a bundle first ('airgap import --keyring site.pub.asc --store %[2]s BUNDLE'), or check --store", ErrNoStore, root, indexName)
	}
	ix, err := readIndex(root)
	if err != nil {
		return nil, nil, err
	}
	ds, err := listBlobs(root)
	if err != nil {
		return nil, nil, err
	}
	return ix, ds, nil
}

// configured reports whether root has an import.hcl (of any kind: an
// unreadable one is reported by ReadStorePolicy).
func configured(root string) bool {
	_, err := os.Lstat(filepath.Join(root, ImportConfigName))
	return err == nil
}
