package export

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/dist/tfconfig"
	"github.com/airgap/airgap/verify"
)

// An export from an offline store ('airgap export --from-store STORE'):
// SelectFromStore picks what to carry from the store's catalog by the same
// rules as an export from the registries (a manifest's constraints,
// latest and platforms; a project's lock file; or addresses), and
// WriteFromStore writes it with the store's blobs as they are (see
// bundle/store's Carry), hashing each as it copies it.

// SelectFromStore picks from cat (a store's catalog) what req asks for,
// or the versions addrs names ("ADDRESS" for every version,
// "ADDRESS@VERSION"), or everything when both are empty (all is then
// true). A request's versions are chosen among the store's as export
// chooses among a registry's (constraints, latest N, all; prereleases only
// when named exactly), its platforms among the store's (every platform the
// store has when the manifest names none); a project's locked versions are
// taken exactly, and each package must match one of the lock file's
// hashes. Unless req.NoDeps, what the modules carried call is carried too
// (followDeps), as an export from the registries follows it. What the
// store lacks is an error naming it; a platform it lacks for a version it
// has is a note. blobFile gives the file of a blob in the store (module
// archives are unpacked from it).
func SelectFromStore(ctx context.Context, blobFile func(verify.Digest) (string, error), cat *dist.Catalog, req *Request, addrs []string) (sel *dist.Catalog, all bool, notes []string, err error) {
	sel = &dist.Catalog{Providers: []dist.ProviderVersion{}, Modules: []dist.ModuleVersion{}}
	switch {
	case req == nil && len(addrs) == 0:
		sel.Providers = append(sel.Providers, cat.Providers...)
		sel.Modules = append(sel.Modules, cat.Modules...)
		sel.Releases = append(sel.Releases, cat.Releases...)
		return sel, true, nil, nil
	case req == nil:
		return selectAddrs(cat, addrs)
	}
	if len(req.Gates) > 0 || len(req.Waivers) > 0 {
		return nil, false, nil, fmt.Errorf("%w: an export from a store runs no gates: it carries the results the store holds\nhint: remove the gate and waive blocks (they belong to the export from the registries)", ErrManifest)
	}
	seen := map[string]bool{}
	for i := range req.Providers {
		r := &req.Providers[i]
		ps, n, err := selectProvider(cat, req, r)
		if err != nil {
			return nil, false, nil, err
		}
		notes = append(notes, n...)
		for _, p := range ps {
			if !seen[p.Key()] {
				seen[p.Key()] = true
				sel.Providers = append(sel.Providers, p)
			}
		}
	}
	for _, r := range req.Modules {
		ms, err := selectModule(cat, r)
		if err != nil {
			return nil, false, nil, err
		}
		for _, m := range ms {
			if !seen[m.Key()] {
				seen[m.Key()] = true
				sel.Modules = append(sel.Modules, m)
			}
		}
	}
	for _, rq := range req.Releases {
		rs, n, err := selectStoreReleases(cat, req, rq)
		if err != nil {
			return nil, false, nil, err
		}
		notes = append(notes, n...)
		sel.Releases = append(sel.Releases, rs...)
	}
	if !req.NoDeps {
		n, err := followDeps(ctx, blobFile, cat, req, sel, seen)
		if err != nil {
			return nil, false, nil, err
		}
		notes = append(notes, n...)
	}
	sel.Sort()
	return sel, false, notes, nil
}

// followDeps adds to sel what its modules call, from the store: each
// registry module a module calls (the newest version the store has that
// matches the call's constraint, as export takes the registry's newest)
// and each provider it requires (the newest match, on the request's
// platforms), level by level, within MaxModuleDepth, MaxDependencyModules
// and MaxDependencyProviders. A module's archive is unpacked from the
// store (getter.Unpack: the checked extraction every module goes through,
// its budget of entries and bytes) into a temporary directory removed
// after it is read, and read with tfconfig as export reads it. A call the
// store has no version for is an error naming the module that makes it.
func followDeps(ctx context.Context, blobFile func(verify.Digest) (string, error), cat *dist.Catalog, req *Request, sel *dist.Catalog, seen map[string]bool) ([]string, error) {
	var notes []string
	provSeen := map[string]bool{}
	for _, p := range sel.Providers {
		provSeen[strings.ToLower(p.Addr())] = true
	}
	for _, r := range req.Providers {
		provSeen[strings.ToLower(r.Addr.String())] = true
	}
	level := append([]dist.ModuleVersion{}, sel.Modules...)
	mods, provs := 0, 0
	for depth := 1; len(level) > 0; depth++ {
		var next []dist.ModuleVersion
		for _, mv := range level {
			calls, reqs, n, err := moduleDeps(ctx, blobFile, mv)
			if err != nil {
				return nil, err
			}
			notes = append(notes, n...)
			for _, c := range calls {
				if depth > MaxModuleDepth {
					return nil, fmt.Errorf("module %s: %w: modules calling modules more than %d deep in the store\nhint: name the modules you need and export with --no-deps; nothing was written", mv, ErrDependencies, MaxModuleDepth)
				}
				ms, err := selectModule(cat, c)
				if err != nil {
					return nil, err
				}
				for _, m := range ms {
					if seen[m.Key()] {
						continue
					}
					seen[m.Key()] = true
					if mods++; mods > MaxDependencyModules {
						return nil, fmt.Errorf("module %s: %w: modules call more than %d module versions\nhint: name the modules you need and export with --no-deps; nothing was written", m, ErrDependencies, MaxDependencyModules)
					}
					sel.Modules = append(sel.Modules, m)
					next = append(next, m)
				}
			}
			for i := range reqs {
				r := &reqs[i]
				if provSeen[strings.ToLower(r.Addr.String())] {
					continue
				}
				provSeen[strings.ToLower(r.Addr.String())] = true
				if provs++; provs > MaxDependencyProviders {
					return nil, fmt.Errorf("provider %s (%s): %w: modules require more than %d providers\nhint: name the providers you need and export with --no-deps; nothing was written", r.Addr, r.Why, ErrDependencies, MaxDependencyProviders)
				}
				ps, n, err := selectProvider(cat, req, r)
				if err != nil {
					return nil, err
				}
				notes = append(notes, n...)
				for _, p := range ps {
					if !seen[p.Key()] {
						seen[p.Key()] = true
						sel.Providers = append(sel.Providers, p)
					}
				}
			}
		}
		level = next
	}
	return notes, nil
}

// moduleDeps reads what module version mv calls, from its archive in the
// store: registry module calls and required providers, as requests (the
// newest match of each constraint).
func moduleDeps(ctx context.Context, blobFile func(verify.Digest) (string, error), mv dist.ModuleVersion) ([]ModuleReq, []ProviderReq, []string, error) {
	tmp, err := os.MkdirTemp("", "airgap-module-")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "tree")
	archive, err := blobFile(mv.Archive)
	if err == nil {
		err = getter.Unpack(ctx, archive, tree, getter.NewBudget())
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("module %s: unpacking its archive from the store to read what it calls: %w", mv, err)
	}
	dir := filepath.Join(tree, filepath.FromSlash(mv.Subdir))
	cfg, err := tfconfig.LoadTreeIn(tree, dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("module %s: reading its configuration: %w", mv, err)
	}
	var mods []ModuleReq
	var notes []string
	for _, c := range cfg.Modules {
		addr, _, ok, err := dist.ParseModuleSource(c.Source)
		if err != nil || !ok {
			continue // vendored, or a source the clients fetch as written
		}
		r := ModuleReq{Addr: addr, Latest: 1, Why: "called by " + mv.String()}
		if c.VersionExpr != "" && c.Version == "" {
			notes = append(notes, fmt.Sprintf("module %s calls %s with version = %s, which its callers set: carrying the newest version the store has", mv, addr, c.VersionExpr))
		}
		if c.Version != "" {
			if r.Constraints, err = parseConstraints(c.Version); err != nil {
				return nil, nil, nil, fmt.Errorf("module %s: %s: version %q: %w", mv, c.Pos, c.Version, err)
			}
		}
		mods = append(mods, r)
	}
	var provs []ProviderReq
	for _, p := range cfg.Providers {
		addr, err := dist.ParseProviderSource(p.Source)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("module %s: %w", mv, err)
		}
		r := ProviderReq{Addr: addr, Latest: 1, Why: "required by module " + mv.String()}
		if p.Version != "" {
			if r.Constraints, err = parseConstraints(p.Version); err != nil {
				return nil, nil, nil, fmt.Errorf("module %s: provider %s: %w", mv, addr, err)
			}
		}
		provs = append(provs, r)
	}
	return mods, provs, notes, nil
}

// selectProvider picks r's versions and platforms from cat.
func selectProvider(cat *dist.Catalog, req *Request, r *ProviderReq) ([]dist.ProviderVersion, []string, error) {
	byVersion, versions := versionsOf(cat.Providers, r.Addr.String(), dist.ProviderVersion.Addr, func(p dist.ProviderVersion) string { return p.Version })
	chosen := selectVersions(versions, r.Constraints, r.Latest, r.All)
	if len(chosen) == 0 {
		return nil, nil, fmt.Errorf("%w: provider %s (%s): the store has no version matching %s (it has: %s)\nhint: 'airgap inventory --store STORE' lists what it has; nothing was written",
			ErrNotInStore, r.Addr, r.Why, constraintString(r.Constraints), listVersions(versions))
	}
	plats := r.Platforms
	if len(plats) == 0 && !req.PlatformsDefaulted {
		plats = req.Platforms
	}
	var out []dist.ProviderVersion
	var notes []string
	for _, v := range chosen {
		p := byVersion[v]
		if len(plats) > 0 {
			var pks []dist.Package
			for _, pl := range plats {
				os, arch, _ := strings.Cut(pl, "_")
				if pk, ok := p.Package(os, arch); ok {
					pks = append(pks, pk)
				} else {
					notes = append(notes, fmt.Sprintf("provider %s: the store has no %s package", p, pl))
				}
			}
			if len(pks) == 0 {
				return nil, nil, fmt.Errorf("%w: provider %s (%s): the store has none of the platforms asked for (%s)\nhint: it has %s; nothing was written", ErrNotInStore, p, r.Why, strings.Join(plats, ", "), platformList(p))
			}
			p.Packages = pks
		}
		for _, pk := range p.Packages {
			if err := checkLocked(r, "provider "+p.String()+" "+pk.Platform(), pk.H1, pk.Digest); err != nil {
				return nil, nil, err
			}
		}
		out = append(out, p)
	}
	return out, notes, nil
}

// versionsOf is the entries of one address (compared case-insensitively)
// by version, and their versions.
func versionsOf[T any](entries []T, addr string, addrOf func(T) string, version func(T) string) (map[string]T, []string) {
	by := map[string]T{}
	var vs []string
	for _, e := range entries {
		if strings.EqualFold(addrOf(e), addr) {
			by[version(e)] = e
			vs = append(vs, version(e))
		}
	}
	return by, vs
}

func platformList(p dist.ProviderVersion) string {
	var s []string
	for _, pk := range p.Packages {
		s = append(s, pk.Platform())
	}
	return strings.Join(s, ", ")
}

// selectModule picks r's versions from cat.
func selectModule(cat *dist.Catalog, r ModuleReq) ([]dist.ModuleVersion, error) {
	byVersion, versions := versionsOf(cat.Modules, r.Addr.String(), dist.ModuleVersion.Addr, func(m dist.ModuleVersion) string { return m.Version })
	cons := r.Constraints
	if r.Site != nil {
		// The site's module block lists exact versions.
		var vs []string
		for _, v := range r.Site.Versions {
			if _, ok := byVersion[v]; !ok {
				return nil, fmt.Errorf("%w: module %s %s (%s): not in the store\nhint: 'airgap inventory --store STORE' lists what it has; nothing was written", ErrNotInStore, r.Addr, v, r.Why)
			}
			vs = append(vs, v)
		}
		versions, cons = vs, nil
		r.All = true
	}
	chosen := selectVersions(versions, cons, r.Latest, r.All)
	if len(chosen) == 0 {
		return nil, fmt.Errorf("%w: module %s (%s): the store has no version matching %s (it has: %s)\nhint: 'airgap inventory --store STORE' lists what it has; nothing was written",
			ErrNotInStore, r.Addr, r.Why, constraintString(cons), listVersions(versions))
	}
	out := make([]dist.ModuleVersion, 0, len(chosen))
	for _, v := range chosen {
		out = append(out, byVersion[v])
	}
	return out, nil
}

// selectAddrs picks the versions addrs names: ADDRESS (every version the
// store has) or ADDRESS@VERSION, a provider source or a module address (a
// three-part address is looked up both ways, as prune does).
func selectAddrs(cat *dist.Catalog, addrs []string) (*dist.Catalog, bool, []string, error) {
	sel := &dist.Catalog{Providers: []dist.ProviderVersion{}, Modules: []dist.ModuleVersion{}}
	seen := map[string]bool{}
	for _, arg := range addrs {
		addr, v, exact := strings.Cut(arg, "@")
		if exact && !dist.ValidVersion(v) {
			return nil, false, nil, fmt.Errorf("%w: %q: want ADDRESS or ADDRESS@VERSION, e.g. hashicorp/aws@5.61.0", ErrNotInStore, dist.Printable(arg))
		}
		var names []string
		if p, err := dist.ParseProviderSource(addr); err == nil {
			names = append(names, dist.KindProvider+" "+strings.ToLower(p.String()))
		}
		if m, sub, ok, err := dist.ParseModuleSource(addr); err == nil && ok && sub == "" {
			names = append(names, dist.KindModule+" "+strings.ToLower(m.String()))
		}
		match := func(kind, a, version string) bool {
			if exact && dist.VersionKey(a, version) != dist.VersionKey(a, v) {
				return false
			}
			for _, n := range names {
				if n == kind+" "+strings.ToLower(a) {
					return true
				}
			}
			return false
		}
		found := false
		for _, p := range cat.Providers {
			if match(dist.KindProvider, p.Addr(), p.Version) {
				found = true
				if !seen[p.Key()] {
					seen[p.Key()] = true
					sel.Providers = append(sel.Providers, p)
				}
			}
		}
		for _, m := range cat.Modules {
			if match(dist.KindModule, m.Addr(), m.Version) {
				found = true
				if !seen[m.Key()] {
					seen[m.Key()] = true
					sel.Modules = append(sel.Modules, m)
				}
			}
		}
		if !found {
			return nil, false, nil, fmt.Errorf("%w: %s is not in the store\nhint: 'airgap inventory --store STORE' lists what it has; nothing was written", ErrNotInStore, dist.Printable(arg))
		}
	}
	sel.Sort()
	return sel, false, nil, nil
}

// StoreWriteOptions say how WriteFromStore writes.
type StoreWriteOptions struct {
	Out         string
	Key         *openpgp.Entity
	Tool        string
	Compression bundle.Compression
	ModTime     time.Time
	Delta       *DeltaBase
	SplitSize   int64
	Log         func(format string, a ...any)
	// Written is told the bytes read from the store and hashed as they
	// are written (progress).
	Written func(n int64)
}

// StoreSummary is what an export from a store did ('airgap export
// --from-store --json' prints it).
type StoreSummary struct {
	OK               bool     `json:"ok"`
	Store            string   `json:"store"`
	Out              string   `json:"out"`
	Bundle           string   `json:"bundle"`
	Size             int64    `json:"size_bytes"`
	ProviderVersions int      `json:"provider_versions"`
	Packages         int      `json:"provider_packages"`
	ModuleVersions   int      `json:"module_versions"`
	Withdrawals      int      `json:"withdrawals"`
	PublisherKeys    int      `json:"declared_publisher_keys"`
	Hops             int      `json:"chain_hops"`
	RecordedHops     int      `json:"chain_hops_recorded_only"`
	Blobs            int      `json:"blobs"`
	BlobBytes        int64    `json:"blob_bytes"`
	Omitted          int      `json:"blobs_omitted"`
	Delta            string   `json:"delta,omitempty"`
	SBOM             string   `json:"sbom,omitempty"`
	Millis           int64    `json:"duration_ms"`
	Notes            []string `json:"notes"`
	Parts            int      `json:"parts,omitempty"`
}

// WriteFromStore writes plan as a signed bundle: the SBOM added (when the
// store has Go build information for every package), a delta made if
// asked, then the bundle written to a temporary file beside opt.Out with
// each blob hashed as it is copied from the store (one read of each), and
// split if asked. Only when every blob checked is the file renamed to
// opt.Out; a damaged blob (named, with the entry that carries it and its
// path), an interruption or a write error removes the temporary file:
// nothing is left behind.
func WriteFromStore(ctx context.Context, c *store.Carry, plan *store.CarryPlan, opt StoreWriteOptions) (*StoreSummary, *bundle.PartsIndex, error) {
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	start := time.Now()
	m := plan.Manifest
	m.Tool = opt.Tool
	if !opt.ModTime.IsZero() {
		m.Created = &opt.ModTime
	}
	sum := &StoreSummary{OK: true, Store: c.Name, Out: opt.Out, ProviderVersions: len(m.Catalog.Providers), ModuleVersions: len(m.Catalog.Modules),
		PublisherKeys: len(m.PublisherKeys), Hops: len(m.Chain) - plan.Recorded, RecordedHops: plan.Recorded, Notes: []string{}}
	for _, w := range m.Withdraw {
		sum.Withdrawals += len(w.Versions)
	}
	for _, p := range m.Catalog.Providers {
		sum.Packages += len(p.Packages)
	}
	sbomBytes, note, err := storeSBOM(c, m)
	if err != nil {
		return nil, nil, err
	}
	if note != "" {
		sum.Notes = append(sum.Notes, note)
	}
	extra := map[verify.Digest]bool{}
	if sbomBytes != nil {
		d := verify.DigestBytes(sbomBytes)
		m.SBOM, m.SBOMGenerator, sum.SBOM = d, sbom.Generator, string(d)
		m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: int64(len(sbomBytes)), Role: dist.RoleSBOM})
		extra[d] = true
		m.Normalize()
	}
	if plan.Recorded > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d bundle(s) came into the store before airgap kept bundles' signed manifests: the chain records them (signer and time as the store noted) but cannot prove them, and %d record(s) of this bundle are tied to no proven hop; a store whose import policy has a chain block refuses it (import those bundles into this store again to keep their manifests)", plan.Recorded, len(plan.Untied)))
	}
	if base := opt.Delta; base != nil {
		if err := base.notOwnStore(c.Index); err != nil {
			return nil, nil, err
		}
		sum.Omitted, sum.Delta = base.Apply(m), base.Desc
		sum.Omitted -= carryChain(m)
		opt.Log("delta against %s: %d of %d blobs are already on the other side and are not carried", base.Desc, sum.Omitted, len(m.Blobs))
	}
	if err := m.Validate(); err != nil {
		return nil, nil, err
	}
	signAt := opt.ModTime
	if signAt.IsZero() {
		signAt = time.Now()
	}
	if plan.SignAt.After(signAt) {
		signAt = plan.SignAt
	}
	err = bundle.CreateAtomic(opt.Out, func(f *os.File) error {
		bw, err := bundle.NewWriter(f, m, opt.Key, bundle.WriterOptions{Compression: opt.Compression, ModTime: opt.ModTime, SignTime: signAt})
		if err != nil {
			return err
		}
		for _, b := range bw.Remaining() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var err error
			if extra[b.Digest] {
				err = bw.WriteBlob(b.Digest, bytes.NewReader(sbomBytes))
			} else {
				err = plan.WriteBlob(bw, b, opt.Written)
			}
			if err != nil {
				return err
			}
		}
		return bw.Close()
	})
	if err != nil {
		return nil, nil, err
	}
	fi, err := os.Stat(opt.Out)
	if err != nil {
		return nil, nil, err
	}
	data, _ := m.Marshal()
	sum.Bundle, sum.Size = string(verify.DigestBytes(data)), fi.Size()
	sum.Blobs, sum.BlobBytes = m.Totals()
	sum.Millis = time.Since(start).Milliseconds()
	if opt.SplitSize <= 0 {
		return sum, nil, nil
	}
	ix, err := bundle.SplitFile(opt.Out, opt.SplitSize, opt.Key, opt.ModTime)
	if err != nil {
		return nil, nil, fmt.Errorf("splitting %s: %w (the whole bundle is kept)", opt.Out, err)
	}
	sum.Parts = len(ix.Parts)
	return sum, ix, os.Remove(opt.Out)
}

// carryChain marks the chain's blobs (hop manifests, signatures, keys and
// station approvals)
// carried again in a delta, and returns how many it marked: they are
// small, and with them the transfer station checks the whole chain of a
// delta (every hop's signature, every tie) instead of leaving it to the
// import.
func carryChain(m *bundle.Manifest) int {
	n := 0
	for i, b := range m.Blobs {
		switch b.Role {
		case dist.RoleBundleManifest, dist.RoleBundleSignature, dist.RoleBundleKey, dist.RoleApproval:
			if b.Omitted {
				m.Blobs[i].Omitted = false
				n++
			}
		}
	}
	return n
}

// storeSBOM builds the bundle's SBOM (check.BuildSBOM) from the Go build
// information the store keeps for every package, or returns a note saying
// why there is none (a package without build information: brought by a
// bundle written before airgap recorded it). Each document is read
// verified and within goinfo.MaxDocument.
func storeSBOM(c *store.Carry, m *bundle.Manifest) ([]byte, string, error) {
	infos := map[verify.Digest]*goinfo.Info{}
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			if pk.BuildInfo == "" {
				return nil, fmt.Sprintf("no SBOM: provider %s %s came into the store without Go build information (exported by an older airgap)", p, pk.Platform()), nil
			}
			if _, ok := infos[pk.Digest]; ok {
				continue
			}
			doc, err := c.ReadBlob(pk.BuildInfo, goinfo.MaxDocument)
			if err != nil {
				return nil, "", fmt.Errorf("%w: Go build information %s of provider %s %s in the store: %v\nhint: the store's copy is damaged; import a bundle that carries it again; nothing was written", store.ErrCarry, pk.BuildInfo.Short(), p, pk.Platform(), err)
			}
			info, err := goinfo.Decode(doc)
			if err != nil {
				return nil, "", fmt.Errorf("%w: Go build information of provider %s %s: %v", store.ErrCarry, p, pk.Platform(), err)
			}
			infos[pk.Digest] = info
		}
	}
	b, err := check.BuildSBOM(m, func(pk dist.Package) (*goinfo.Info, bool) {
		i, ok := infos[pk.Digest]
		return i, ok
	})
	return b, "", err
}

// notOwnStore refuses a --have inventory of the very store being exported
// from: every blob would be omitted and the bundle would carry nothing
// new. It is that store's when its import history is this one's, bundle
// for bundle and second for second.
func (ds *DeltaBase) notOwnStore(ix *store.Index) error {
	if ds.imports == nil || len(ix.Imports) == 0 || len(ds.imports) != len(ix.Imports) {
		return nil
	}
	for i, e := range ix.Imports {
		if ds.imports[i].Bundle != e.Bundle || !ds.imports[i].Time.Equal(e.Time) {
			return nil
		}
	}
	return fmt.Errorf("%w: --have %s is this store's own inventory (the same %d imports): every blob would be omitted, and the bundle would carry nothing the next store lacks\nhint: give --have the inventory of the store the bundle goes to ('airgap inventory --store NEXT --json' there), or --since the last bundle sent over a one-way link; nothing was written",
		ErrHaveOwnStore, ds.Desc, len(ix.Imports))
}

// selectStoreReleases selects a cli block's releases from what the store
// holds (the versions as export selects them from the publisher's list),
// each with the archives of the block's platforms the store has; the
// records and their publisher keys are carried as the store holds them.
func selectStoreReleases(cat *dist.Catalog, req *Request, rq ReleaseReq) ([]dist.CLIRelease, []string, error) {
	if rq.PublisherKey != "" {
		return nil, nil, fmt.Errorf("%w: cli %q (%s): an export from a store carries releases with the publisher keys they were checked against; publisher_key belongs to the export from the publishers\nhint: remove publisher_key from the block; nothing was written", ErrManifest, rq.Product, rq.Block)
	}
	byVersion := map[string]dist.CLIRelease{}
	var versions []string
	for _, r := range cat.Releases {
		if r.Product == rq.Product {
			byVersion[r.Version] = r
			versions = append(versions, r.Version)
		}
	}
	chosen := selectVersions(versions, rq.Constraints, rq.Latest, rq.All)
	if len(chosen) == 0 {
		return nil, nil, fmt.Errorf("%w: cli %q (%s): the store holds no release matching %s\nhint: 'airgap inventory' lists the releases it holds; nothing was written", ErrManifest, rq.Product, rq.Block, constraintString(rq.Constraints))
	}
	plats := rq.Platforms
	if len(plats) == 0 && !req.PlatformsDefaulted {
		plats = req.Platforms
	}
	var out []dist.CLIRelease
	var notes []string
	for _, v := range chosen {
		r := byVersion[v]
		if len(plats) > 0 {
			keep := r.Builds[:0:0]
			for _, b := range r.Builds {
				for _, p := range plats {
					if b.Platform() == p {
						keep = append(keep, b)
					}
				}
			}
			for _, p := range plats {
				found := false
				for _, b := range keep {
					found = found || b.Platform() == p
				}
				if !found {
					notes = append(notes, fmt.Sprintf("release %s: the store has no %s archive", r, p))
				}
			}
			if len(keep) == 0 {
				return nil, nil, fmt.Errorf("%w: cli %q (%s): the store holds release %s for none of %s\nhint: 'airgap inventory' lists its archives; nothing was written", ErrManifest, rq.Product, rq.Block, r, strings.Join(plats, ", "))
			}
			r.Builds = keep
		}
		out = append(out, r)
	}
	return out, notes, nil
}
