package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Carrying onwards: 'airgap export --from-store' writes a bundle from what
// an offline store holds, for the next network (an enclave, across a
// diode), without any network. Nothing is rebuilt: every blob is the
// store's, byte for byte what the bundles that brought it carried (the
// publisher's SHA256SUMS, signature and keys, the site re-signature and its
// tier, h1 and zh hashes, gate results and reports, Go build information,
// vendored module archives); what is new is the manifest that lists them,
// signed by this enclave's key, with the store's withdrawals and
// publisher-key approvals that concern what it carries, and the chain of
// custody (bundle.Hop) that lets the next enclave check every earlier
// signature again.
//
// ErrCarry is the class of refusals of such an export.
var ErrCarry = errors.New("cannot export from the store")

// Carry is an export from the store in progress: the store locked (no
// import, prune or gc changes what the export reads until Close) and its
// index read.
type Carry struct {
	Root string
	// Name is the store as it was given (its directory, or the address of
	// a store in object storage), for messages.
	Name   string
	Index  *Index
	unlock func()
	// remote, for a store in object storage, is the bucket every blob
	// is read from (Root then holds only its staged index); ctx bounds
	// those reads.
	remote Remote
	ctx    context.Context
}

// OpenCarry takes the store's lock (waiting for it with wait, as import's
// --wait does) and reads its index.
func OpenCarry(root string, wait bool) (*Carry, error) {
	if _, err := os.Stat(indexPath(root)); err != nil {
		return nil, fmt.Errorf("%w: %s has no %s\nhint: --from-store takes the directory of an offline store (what 'airgap import --store' filled); nothing was written", ErrNoStore, root, indexName)
	}
	unlock, err := lockExisting(root, wait)
	if err != nil {
		return nil, err
	}
	ix, err := readIndex(root)
	if err != nil {
		unlock()
		return nil, err
	}
	return &Carry{Root: root, Name: root, Index: ix, unlock: unlock, ctx: context.Background()}, nil
}

// OpenRemoteCarry is OpenCarry for a store in object storage (name, its
// address): dir is a private directory holding its staged index, r the
// bucket every blob streams from, hashed as it streams; the caller holds
// the store's lease, and release (called by Close) gives it up and
// removes dir. Every blob is read through the same paths as on disk
// (Plan, WriteBlob, ReadBlob, BlobFile), so the checks are the same.
func OpenRemoteCarry(ctx context.Context, name, dir string, r Remote, release func()) (*Carry, error) {
	ix, err := readIndex(dir)
	if err != nil {
		release()
		return nil, err
	}
	return &Carry{Root: dir, Name: name, Index: ix, unlock: release, remote: r, ctx: ctx}, nil
}

// ReadBlob reads blob d, at most limit bytes, verified against d.
func (c *Carry) ReadBlob(d verify.Digest, limit int64) ([]byte, error) {
	if c.remote == nil {
		return readBlobLimited(c.Root, d, limit)
	}
	return ReadRemoteBlob(c.ctx, c.remote, d, limit)
}

// BlobFile is the path of a file holding blob d, for the readers that
// need one (a module archive unpacked): the store's own file, or, from
// a bucket, a copy fetched into the private directory, verified as it
// streams (removed with it at Close).
func (c *Carry) BlobFile(d verify.Digest) (string, error) {
	path := BlobPath(c.Root, d)
	if c.remote == nil || fileExists(path) {
		return path, nil
	}
	f, err := fetchInto(c.Root, c.remote, d)
	if err != nil {
		return "", err
	}
	f.Close()
	return path, nil
}

// Close releases the store's lock.
func (c *Carry) Close() {
	if c.unlock != nil {
		c.unlock()
		c.unlock = nil
	}
}

// CarryPlan is what an export from the store writes: the manifest (its
// SBOM still to be added) and the store file of every blob it lists.
type CarryPlan struct {
	Manifest *bundle.Manifest
	Files    map[verify.Digest]string
	// SignAt is the newest hop's signature time: the bundle's signature
	// must not be older than what it carries.
	SignAt time.Time
	// Recorded counts the hops recorded without their manifests, and
	// Untied what no kept manifest carries (see bundle.Hop).
	Recorded int
	Untied   []string
	c        *Carry
}

// Plan makes the manifest of an export carrying sel, a selection of the
// store's catalog (provider and module versions as the store has them,
// a provider with some of its packages), with withdraw and reinstate
// blocks of the export's own (may be nil), and:
//
//   - the store's withdrawals of the addresses it carries (all of them when
//     all is set: the whole store goes), so a version withdrawn here
//     arrives withdrawn;
//   - a publisher-key declaration for every key this store accepted as new
//     for a namespace (declared by a bundle, approved at an import, or in
//     a pins file; not trust on first use) that signs a provider carried:
//     this store's approval, signed by this enclave, which the next store's
//     own pins still judge;
//   - the chain of custody (chain).
//
// Every blob must be in the store as a regular file; its size is the
// file's (the write, WriteBlob, hashes it as it copies it).
func (c *Carry) Plan(sel *dist.Catalog, all bool, withdraw, reinstate []dist.Withdrawal) (*CarryPlan, error) {
	p := &CarryPlan{Files: map[verify.Digest]string{}, c: c}
	m := &bundle.Manifest{Format: bundle.FormatVersion, Catalog: *sel}
	if m.Catalog.Providers == nil {
		m.Catalog.Providers = []dist.ProviderVersion{}
	}
	if m.Catalog.Modules == nil {
		m.Catalog.Modules = []dist.ModuleVersion{}
	}
	p.Manifest = m
	for d, role := range sel.Blobs() {
		if err := p.add(m, d, role); err != nil {
			return nil, err
		}
	}
	m.Withdraw = append(c.withdrawals(sel, all), withdraw...)
	m.Reinstate = reinstate
	decls, err := c.declarations(sel)
	if err != nil {
		return nil, err
	}
	m.PublisherKeys = decls
	if err := c.chain(p); err != nil {
		return nil, err
	}
	m.Normalize()
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCarry, err)
	}
	return p, nil
}

// add lists the store's blob d (role) in the manifest, sized by its file
// (from a bucket, by the object's size as the remote says it: WriteBlob
// checks it against the bytes).
func (p *CarryPlan) add(m *bundle.Manifest, d verify.Digest, role string) error {
	if _, ok := p.Files[d]; ok {
		return nil
	}
	path := BlobPath(p.c.Root, d)
	var size int64
	var err error
	if p.c.remote != nil {
		path = "the bucket"
		size, err = p.c.remote.Size(p.c.ctx, d)
	} else {
		var fi os.FileInfo
		if fi, err = os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
			err = errors.New("not a regular file")
		} else if err == nil {
			size = fi.Size()
		}
	}
	if err != nil {
		what := m.Describe(d)
		return fmt.Errorf("%w: the store lacks blob %s (%s, %s) that its index lists: %v\nhint: the store is damaged; import a bundle that carries it again (or restore the store from a backup), then export again; nothing was written",
			ErrCarry, d.Short(), dist.Printable(what), role, err)
	}
	p.Files[d] = path
	m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: size, Role: role})
	return nil
}

// withdrawals are the store's withdrawals of addresses sel carries (every
// one, with all), as withdraw blocks: one per address and reason.
func (c *Carry) withdrawals(sel *dist.Catalog, all bool) []dist.Withdrawal {
	addrs := map[string]bool{}
	for _, p := range sel.Providers {
		addrs[dist.KindProvider+" "+strings.ToLower(p.Addr())] = true
	}
	for _, m := range sel.Modules {
		addrs[dist.KindModule+" "+strings.ToLower(m.Addr())] = true
	}
	byKey := map[string]*dist.Withdrawal{}
	var out []dist.Withdrawal
	var order []string
	for _, w := range c.Index.Withdrawn {
		if !all && !addrs[w.Kind+" "+strings.ToLower(w.Addr)] {
			continue
		}
		k := w.Kind + "\x00" + w.Addr + "\x00" + w.Reason
		if byKey[k] == nil {
			byKey[k] = &dist.Withdrawal{Kind: w.Kind, Addr: w.Addr, Reason: w.Reason}
			order = append(order, k)
		}
		byKey[k].Versions = append(byKey[k].Versions, w.Version)
	}
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

// declarations lists, for each namespace of sel's providers, the keys this
// store accepted as new (not on first use, nor recorded from a store that
// predates pins) that sign a provider sel carries.
func (c *Carry) declarations(sel *dist.Catalog) ([]bundle.PublisherKeyDecl, error) {
	pins := map[string]*dist.NamespaceKeys{}
	for i := range c.Index.PublisherKeys {
		pins[c.Index.PublisherKeys[i].Namespace] = &c.Index.PublisherKeys[i]
	}
	seen := map[bundle.PublisherKeyDecl]bool{}
	var out []bundle.PublisherKeyDecl
	keyrings := check.KeyringCache{}
	for _, p := range sel.Providers {
		n := pins[p.NamespaceKey()]
		if n == nil {
			continue
		}
		checked, ok := storedSigner(c.Root, p, keyrings)
		if !ok {
			return nil, fmt.Errorf("%w: provider %s: its SHA256SUMS signature in the store does not verify against the keys it came with\nhint: the store's blobs for it are damaged: import a bundle that carries it again, or leave it out of the export; nothing was written", ErrCarry, p)
		}
		pin := n.Find(checked.Signer.Fingerprint)
		if pin == nil || pin.How == dist.PinFirstUse || pin.How == dist.PinExisting {
			continue
		}
		d := bundle.PublisherKeyDecl{Namespace: n.Namespace, Fingerprint: pin.Fingerprint}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out, nil
}

// chain adds the chain of custody to p: a hop for every import whose kept
// manifest, oldest first, carries a record the bundle carries that no
// earlier import's did (check.Ties: what the next enclave ties every
// record to; a later delta that lists the same catalog again adds no hop),
// or withdrew a version it withdraws, each with the hops of its own chain (what the
// store before recorded, Into set to the key that signed the bundle that
// brought them); and,
// should a record be in no kept manifest, a recorded hop for every import
// the store did not keep (imported by an airgap that did not keep
// bundles), so the bundle says where the custody it can prove ends.
// Every kept hop's signature is checked again with its kept key.
func (c *Carry) chain(p *CarryPlan) error {
	m := p.Manifest
	ties := check.NewTies(m)
	withdrew := map[verify.Digest]bool{}
	carried := map[string]bool{}
	for _, w := range m.Withdraw {
		for _, k := range w.Keys() {
			carried[k] = true
		}
	}
	for _, w := range c.Index.Withdrawn {
		if carried[w.Key()] {
			withdrew[w.Bundle] = true
		}
	}
	hops := map[verify.Digest]bundle.Hop{}
	seen := map[verify.Digest]bool{}
	var unkept []ImportEntry
	for _, e := range c.Index.Imports {
		if seen[e.Bundle] {
			continue
		}
		seen[e.Bundle] = true
		if !e.Kept() {
			unkept = append(unkept, e)
			continue
		}
		hm, h, err := c.readKept(e)
		if err != nil {
			return err
		}
		fresh, _ := ties.Mark(hm, nil)
		if !fresh && !withdrew[e.Bundle] {
			continue // what it carries, an earlier import brought
		}
		if err := p.addHop(hops, h); err != nil {
			return err
		}
		for _, r := range hm.Chain {
			if r.Into == "" {
				r.Into = e.Signer.Fingerprint
			}
			if err := p.addHop(hops, r); err != nil {
				return err
			}
		}
	}
	if p.Untied = ties.Untied(); len(p.Untied) > 0 {
		if len(unkept) == 0 {
			return fmt.Errorf("%w: %s: the store's index lists it, but no bundle the store kept carried it\nhint: the store's index was edited or damaged; nothing was written", ErrCarry, p.Untied[0])
		}
		for _, e := range unkept {
			if err := p.addHop(hops, bundle.Hop{Bundle: e.Bundle, Signer: e.Signer, Imported: e.Time}); err != nil {
				return err
			}
			p.Recorded++
		}
	}
	if err := refuseRevokedHops(c.Index, hops); err != nil {
		return err
	}
	for _, h := range hops {
		m.Chain = append(m.Chain, h)
		if h.SignedAt != nil && h.SignedAt.After(p.SignAt) {
			p.SignAt = *h.SignedAt
		}
	}
	return nil
}

// refuseRevokedHops refuses a chain of custody with a hop signed, or
// approved at a station, by a key this store has revoked: the next store's
// import would refuse it by the same rule (judgeSignature, as
// revokedSignersRule applies it), so no bundle is written that this
// store's own import would refuse. Hops are listed in digest order.
func refuseRevokedHops(ix *Index, hops map[verify.Digest]bundle.Hop) error {
	var ds []verify.Digest
	for d := range hops {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	var lines []string
	judge := func(what string, key verify.Signer, at time.Time) {
		if key.Fingerprint == "" {
			return
		}
		if st, why := judgeSignature(standingOf(ix, key.Fingerprint), key, at, false); st != "" {
			lines = append(lines, dist.Printable(what+": "+why))
		}
	}
	for _, d := range ds {
		h := hops[d]
		var at time.Time
		if h.SignedAt != nil {
			at = *h.SignedAt
		}
		judge("the signature of chain hop "+h.Bundle.Short(), h.Signer, at)
		for _, a := range h.Approvals {
			judge("the station approval of chain hop "+h.Bundle.Short(), a.Station, a.Time)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w:\n  %s\nhint: the store holds content that came through a key it has since revoked; export only what bundles signed by keys that are not revoked brought (name the addresses), or bring that content in again through a key that is not revoked; nothing was written",
		ErrCarry, ErrRevokedKey, strings.Join(lines, "\n  "))
}

// addHop adds h and its blobs, once; a hop recorded twice must be
// recorded the same.
func (p *CarryPlan) addHop(hops map[verify.Digest]bundle.Hop, h bundle.Hop) error {
	if prev, ok := hops[h.Bundle]; ok {
		if fmt.Sprint(prev) != fmt.Sprint(h) {
			return fmt.Errorf("%w: the store's kept bundles record hop %s of the chain of custody in two ways\nhint: the store was fed two contradicting chains; nothing was written", ErrCarry, h.Bundle.Short())
		}
		return nil
	}
	hops[h.Bundle] = h
	if !h.Checkable() {
		return nil
	}
	m := p.Manifest
	for _, b := range []struct {
		d    verify.Digest
		role string
	}{{h.Bundle, dist.RoleBundleManifest}, {h.Signature, dist.RoleBundleSignature}, {h.Key, dist.RoleBundleKey}} {
		if err := p.add(m, b.d, b.role); err != nil {
			return err
		}
	}
	for _, a := range h.Approvals {
		if err := p.add(m, a.Approval, dist.RoleApproval); err != nil {
			return err
		}
		if err := p.add(m, a.Key, dist.RoleBundleKey); err != nil {
			return err
		}
	}
	return nil
}

// readKept reads an import's kept manifest, checks its kept signature with
// its kept key again, and returns the manifest and its hop.
func (c *Carry) readKept(e ImportEntry) (*bundle.Manifest, bundle.Hop, error) {
	fail := func(err error) (*bundle.Manifest, bundle.Hop, error) {
		return nil, bundle.Hop{}, fmt.Errorf("%w: the store's copy of bundle %s (imported %s): %v\nhint: the store's kept copy is damaged; import that bundle again (it keeps a fresh copy) or restore the store from a backup; nothing was written",
			ErrCarry, e.Bundle.Short(), e.Time.Format(time.RFC3339), err)
	}
	data, err := c.ReadBlob(e.Bundle, bundle.MaxManifestSize)
	if err != nil {
		return fail(err)
	}
	sig, err := c.ReadBlob(e.Signature, bundle.MaxSignatureSize)
	if err != nil {
		return fail(err)
	}
	key, err := c.ReadBlob(e.SignerKey, verify.MaxKeyringSize)
	if err != nil {
		return fail(err)
	}
	kr, err := verify.ReadKeyring(bytes.NewReader(key))
	if err != nil {
		return fail(err)
	}
	checked, err := verify.CheckSignature(kr, bytes.NewReader(data), sig)
	if err != nil {
		return fail(err)
	}
	if checked.Signer != e.Signer {
		return fail(fmt.Errorf("signed by %s, but the history says %s", checked.Signer, e.Signer))
	}
	hm, err := bundle.ParseManifest(data)
	if err != nil {
		return fail(err)
	}
	at := checked.Created.UTC()
	h := bundle.Hop{Bundle: e.Bundle, Signature: e.Signature, Key: e.SignerKey, Signer: e.Signer, SignedAt: &at, Imported: e.Time}
	for _, a := range e.Approvals {
		if a.StationKey != "" && len(h.Approvals) < bundle.MaxHopApprovals {
			h.Approvals = append(h.Approvals, bundle.HopApproval{Approval: a.Blob, Key: a.StationKey, Station: a.Station, Time: a.Time})
		}
	}
	return hm, h, nil
}

// WriteBlob copies blob b from the store into bw, which hashes it as it
// copies (one read of the store: no pass before the write). A file damaged
// on disk (a flipped bit, a truncation, a file grown longer, a link or
// anything but a regular file, a file replaced while it is opened, a read
// error) is an ErrCarry naming the blob, the entry that carries it and its
// path; the caller writes the bundle to a temporary file and removes it on
// any error, so nothing is left behind. A failure to write (a full disk)
// is returned as it is: it says nothing of the store. counted (may be nil)
// is told the bytes read.
//
// From a bucket, the object is streamed the same way, hashed as it
// streams (and again by bw): a swapped, truncated or grown object, or
// one gone, is the same ErrCarry naming the blob.
func (p *CarryPlan) WriteBlob(bw *bundle.Writer, b bundle.Blob, counted func(int64)) error {
	path := p.Files[b.Digest]
	var f io.ReadCloser
	var err error
	if p.c.remote != nil {
		f, _, err = p.c.remote.Stream(p.c.ctx, b.Digest)
	} else {
		f, err = openRegular(path)
	}
	if err != nil {
		return p.damaged(b, err)
	}
	defer f.Close()
	src := &storeReader{r: f, path: path, n: counted}
	err = bw.WriteBlob(b.Digest, src)
	switch {
	case err == nil:
		return nil
	case src.err != nil:
		return p.damaged(b, src.err)
	case errors.Is(err, verify.ErrDigestMismatch), errors.Is(err, verify.ErrSizeMismatch):
		return p.damaged(b, fmt.Errorf("%s: %w", path, err))
	}
	return err
}

// damaged is the refusal of an export whose blob b is damaged in the store.
func (p *CarryPlan) damaged(b bundle.Blob, err error) error {
	return fmt.Errorf("%w: blob %s (%s) in the store is damaged: %v\nhint: a disk error or tampering changed it after it was imported; import a bundle that carries it again (the import replaces a damaged copy with the bundle's verified bytes) or restore the store from a backup, then export again; nothing was left behind",
		ErrCarry, b.Digest.Short(), dist.Printable(p.Manifest.Describe(b.Digest)), err)
}

// openRegular opens path if it is a regular file (links are not followed)
// and is still the file looked at when it is open.
func openRegular(path string) (*os.File, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !li.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(li, fi) {
		f.Close()
		return nil, fmt.Errorf("%s was replaced while it was opened", path)
	}
	return f, nil
}

// storeReader reads a store file for WriteBlob, keeping its first read
// error (told apart from the bundle writer's own) and counting.
type storeReader struct {
	r    io.Reader
	path string
	n    func(int64)
	err  error
}

func (s *storeReader) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if s.n != nil {
		s.n(int64(n))
	}
	if err != nil && err != io.EOF && s.err == nil {
		s.err = fmt.Errorf("reading %s: %w", s.path, err)
	}
	return n, err
}
