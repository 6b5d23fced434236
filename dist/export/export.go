package export

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/hashicorp/go-version"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/docs"
	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/dist/tfconfig"
	"github.com/airgap/airgap/verify"
)

// Options configure Run.
type Options struct {
	Client   *registry.Client
	CacheDir string
	Jobs     int
	// SiteKey re-signs SHA256SUMS of providers whose registry lists no
	// signing key (registry.opentofu.org may), so Terraform accepts them.
	SiteKey *openpgp.Entity
	DryRun  bool
	// MaxPackageSize bounds each provider package download (0:
	// registry.DefaultMaxPackageSize); MaxModuleSize each module archive
	// fetched over HTTP (0: registry.DefaultMaxModuleSize). A larger body is
	// cut off at the limit and the export fails.
	MaxPackageSize, MaxModuleSize int64
	// MaxGitSize bounds the git objects of one git module source, its
	// submodules included, beyond the files it checks out (0:
	// getter.MaxGitRepository); see getter.Options.
	MaxGitSize int64
	// GateReports is where gates keep their reports and output (see
	// runGates); required when the request has gates. GateJobs bounds the
	// gate runs at once (0: 2).
	GateReports string
	GateJobs    int
	// Log receives progress lines and notices.
	Log func(format string, a ...any)
	// Progress, if set, is kept up to date for a live display.
	Progress *Progress
	// Methods say where providers come from (the CLI configuration's
	// provider_installation, or --provider-mirror; see sourcesFor); none:
	// every provider from its origin registry.
	Methods []registry.InstallMethod
	// TrustMirrorHashes lets a package from a network mirror whose origin
	// registry cannot be reached be carried on the mirror's hashes alone,
	// marked as such in the bundle.
	TrustMirrorHashes bool
	// MaxDocsSize bounds each provider version's documentation (0:
	// dist.DefaultDocsBytes); over it the docs are left out and the
	// bundle says why. NoDocs leaves every provider's docs out (providerDocs).
	MaxDocsSize int64
	NoDocs      bool
	// Offline is what the offline store's inventory (--have) says: the
	// versions it withdrew are left out of version constraints (ReadHave).
	Offline *Offline
	// RecheckCache hashes every cached package before it is used, as its
	// first export after the download did (see cachedPackage): what a
	// second attempt does after WriteBundle found a damaged cache entry
	// (ErrDamagedCache).
	RecheckCache bool
}

// Progress is what an export is doing now; safe to read while it runs.
type Progress struct {
	PackagesTotal, PackagesDone atomic.Int64
	mu                          sync.Mutex
	active                      map[string]*activeDownload
}

// activeDownload is one name of Progress.active: n downloads under it
// (two hosts may publish the same namespace/type/version), the oldest since.
type activeDownload struct {
	n     int
	since time.Time
}

func (p *Progress) begin(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.active == nil {
		p.active = map[string]*activeDownload{}
	}
	if a := p.active[what]; a != nil {
		a.n++
	} else {
		p.active[what] = &activeDownload{n: 1, since: time.Now()}
	}
	p.mu.Unlock()
}

func (p *Progress) end(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if a := p.active[what]; a != nil {
		if a.n--; a.n <= 0 {
			delete(p.active, what)
		}
	}
	p.PackagesDone.Add(1) // under the lock: Status never sees it done and still active
	p.mu.Unlock()
}

// Active lists the downloads under way, oldest first.
func (p *Progress) Active() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.activeLocked()
}

func (p *Progress) activeLocked() []string {
	out := make([]string, 0, len(p.active))
	for k := range p.active {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return p.active[out[i]].since.Before(p.active[out[j]].since) })
	return out
}

// Result is a finished export.
type Result struct {
	Manifest *bundle.Manifest
	Files    map[verify.Digest]string // blob -> path in the cache
	Plan     []string                 // what was resolved (also for --dry-run)
	Planned  []PlanItem               // the same, for machines
	reasons  []dist.Reason            // why each planned entry is there (Manifest.RequestedBy)
	Gaps     []string                 // requested platforms a provider version does not publish
	Warnings []string
	Bytes    int64 // downloaded this run
	Cached   int   // packages found in the cache
	// MirrorHashesOnly lists the provider versions carried with a network
	// mirror's hashes only (mirrorPackage), with the mirror's URL.
	MirrorHashesOnly []string
	// LeftOut lists the versions a constraint matched that the offline
	// store withdrew (Options.Offline), left out of the plan.
	LeftOut []string
	// BuildInfo is the Go build information of each package's plugin, by
	// the package's digest (what the SBOM is made of).
	BuildInfo map[verify.Digest]*goinfo.Info
	// GateFailures lists the entries that failed a gate (the export then
	// fails); GateReports is where the reports are.
	GateFailures []GateFailure
	GateReports  string
	// DocsMissing lists the provider versions exported without their
	// documentation, with why (docsReason).
	DocsMissing []string
	cacheDir    string
	gates       []GateSpec
}

type exporter struct {
	opt     Options
	req     *Request
	mu      sync.Mutex
	res     *Result
	blobs   map[verify.Digest]bundle.Blob
	sigOnce map[string]*sumsEntry
	// flight shares one download among concurrent requests for a digest
	// (two addresses or origins serving byte-identical packages).
	flight singleflight.Group
	// shorthand: registry.opentofu.org module addresses requested or
	// already noted (noteShorthand).
	shorthand map[string]bool
	// docsDown: hosts of docs repositories that could not be reached in
	// this export, and why (fetchProviderDocs).
	docsDown map[string]string
	// chosenBy is where each version the plan carries was asked for
	// (FILE:LINE:COL of its block, or why), by kind and version key.
	chosenBy map[string]string
}

// chose records where the plan's version key (ADDRESS VERSION) was asked for.
func (e *exporter) chose(kind, key, at, why string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.chosenBy == nil {
		e.chosenBy = map[string]string{}
	}
	k := kind + " " + dist.VersionKey(strings.Fields(key)[0], strings.Fields(key)[1])
	if _, ok := e.chosenBy[k]; ok {
		return
	}
	if at == "" {
		at = why
	}
	e.chosenBy[k] = at
}

// checkWithdrawCarried refuses a plan that carries a version the same
// manifest withdraws (the bundle could not be written: dist
// ValidateWithdrawals), naming the withdraw block and the block that
// selects the version, FILE:LINE:COL, in a dry run too.
func (e *exporter) checkWithdrawCarried(cat *dist.Catalog) error {
	carried := map[string]bool{}
	for _, p := range cat.Providers {
		carried[dist.KindProvider+" "+p.Key()] = true
	}
	for _, m := range cat.Modules {
		carried[dist.KindModule+" "+m.Key()] = true
	}
	for _, r := range cat.Releases {
		carried[dist.KindRelease+" "+r.ReleaseKey()] = true
	}
	var problems []string
	for i, w := range e.req.Withdraw {
		at := w.Addr
		if i < len(e.req.WithdrawAt) && e.req.WithdrawAt[i] != "" {
			at = e.req.WithdrawAt[i]
		}
		for _, v := range w.Versions {
			k := w.Kind + " " + dist.VersionKey(w.Addr, v)
			if !carried[k] {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: withdraw %q: %s %s is carried too: the block at %s selects it", at, w.Addr, w.Kind, v, e.chosenBy[k]))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: a bundle cannot carry what it withdraws:\n  %s\nhint: take the version out of the selecting block's versions (a constraint like \"~> 3.5, != 3.6.0\"), or out of the withdraw block; nothing was written",
		ErrManifest, dist.PrintableLines(strings.Join(problems, "\n  ")))
}

type sumsEntry struct {
	once  sync.Once
	lines []dist.ShasumsLine
	valid bool
	sums  verify.Digest
	sig   verify.Digest
	keys  []dist.SigningKey
	site  bool
	err   error
}

// Run performs the export.
func Run(ctx context.Context, req *Request, opt Options) (*Result, error) {
	if opt.Jobs <= 0 {
		opt.Jobs = 8
	}
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	if opt.MaxPackageSize <= 0 {
		opt.MaxPackageSize = registry.DefaultMaxPackageSize
	}
	if opt.MaxModuleSize <= 0 {
		opt.MaxModuleSize = registry.DefaultMaxModuleSize
	}
	if abs, err := filepath.Abs(opt.CacheDir); err == nil {
		opt.CacheDir = abs // gates hand paths under it to tools running elsewhere
	}
	for _, d := range []string{"blobs/sha256", "h1", "tmp", "partial"} {
		if err := os.MkdirAll(filepath.Join(opt.CacheDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("download cache: %w", err)
		}
	}
	tidyPartials(opt.CacheDir, time.Now().Add(-abandonedAfter))
	tidyModuleWork(opt.CacheDir, time.Now())
	tidyGateWork(opt.CacheDir, time.Now())
	e := &exporter{opt: opt, req: req, res: &Result{Files: map[verify.Digest]string{}, Warnings: append([]string(nil), req.Warnings...),
		BuildInfo: map[verify.Digest]*goinfo.Info{}, cacheDir: opt.CacheDir, gates: req.Gates},
		blobs: map[verify.Digest]bundle.Blob{}, sigOnce: map[string]*sumsEntry{}}
	for _, w := range req.Warnings {
		opt.Log("warning: %s", w)
	}
	cat := &dist.Catalog{Providers: []dist.ProviderVersion{}, Modules: []dist.ModuleVersion{}}

	// Modules first: their dependencies add provider requests.
	mods, extraProviders, err := e.modules(ctx)
	if err != nil {
		return nil, err
	}
	cat.Modules = mods
	providers := append(append([]ProviderReq{}, req.Providers...), extraProviders...)
	pvs, err := e.providers(ctx, providers)
	if err != nil {
		return nil, err
	}
	cat.Providers = pvs
	if cat.Releases, err = e.releases(ctx); err != nil {
		return nil, err
	}
	if err := e.checkWithdrawCarried(cat); err != nil {
		return nil, err
	}
	var gates []dist.Gate
	if !opt.DryRun {
		e.res.GateReports = opt.GateReports
		if gates, err = e.runGates(ctx, cat); err != nil {
			return e.res, err
		}
	}
	m := &bundle.Manifest{Format: bundle.FormatVersion, Catalog: *cat, Withdraw: req.Withdraw, Reinstate: req.Reinstate, Gates: gates,
		RequestedBy: e.res.requestedBy(cat)}
	for _, b := range e.blobs {
		m.Blobs = append(m.Blobs, b)
	}
	m.Normalize()
	if !opt.DryRun {
		if err := m.Validate(); err != nil {
			return nil, err
		}
	}
	e.res.Manifest = m
	return e.res, nil
}

func (e *exporter) addBlob(d verify.Digest, size int64, role, path string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.blobs[d] = bundle.Blob{Digest: d, Size: size, Role: role}
	e.res.Files[d] = path
}

func (e *exporter) cachePath(d verify.Digest) string {
	return filepath.Join(e.opt.CacheDir, "blobs", "sha256", d.Hex())
}

func (e *exporter) tmpPath() string { return tmpPath(e.opt.CacheDir) }

// tmpPath is a new name in the cache's tmp/ (16 hex digits: see isTmpName).
func tmpPath(cacheDir string) string {
	var b [8]byte
	rand.Read(b[:])
	return filepath.Join(cacheDir, "tmp", hex.EncodeToString(b[:]))
}

// admit moves a verified temp file into the cache under its digest.
func (e *exporter) admit(tmp string, d verify.Digest) (string, error) {
	dst := e.cachePath(d)
	os.Chmod(tmp, 0o444)
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return dst, nil
}

// cached returns the cached file for d if it is there and its bytes still
// hash to d. The cache admits only verified files, but without fsync (a
// download's bytes reach the disk when the kernel writes them), so a crash
// can leave an entry empty or cut short under its name; such an entry is
// removed, and the caller fetches it again. Checking costs a read of the
// file, as much as the h1: hash of a package that follows.
func (e *exporter) cached(d verify.Digest) (string, int64, bool) {
	p := e.cachePath(d)
	f, err := os.Open(p)
	if err != nil {
		return "", 0, false
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return "", 0, false
	}
	got, n, err := verify.CopyDigest(io.Discard, f)
	f.Close()
	if err != nil || got != d {
		os.Remove(p)
		os.Remove(e.scanPath(d)) // what was kept from those bytes goes with them
		return "", 0, false
	}
	return p, n, true
}

// cachedPackage returns the cached package for d. A package the cache has
// already scanned (its h1 file is there: it was hashed against d when it
// was admitted, and scanned then) is taken by its name without being read
// here: its bytes are hashed once, while they are copied into the bundle,
// and bundle.Writer refuses a blob whose bytes do not hash to d before
// anything is published (WriteBundle then removes the damaged entry:
// ErrDamagedCache). The pre-pass this replaces read every package a
// second time, a fifth of a warm re-export. A package with no h1 file,
// and every package under RecheckCache, is checked first as before
// (cached): its h1 is about to be computed and kept from those bytes,
// which must not come from a damaged entry.
func (e *exporter) cachedPackage(d verify.Digest) (string, int64, bool) {
	if !e.opt.RecheckCache {
		if hi, err := os.Lstat(e.scanPath(d)); err == nil && hi.Mode().IsRegular() {
			p := e.cachePath(d)
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
				return p, fi.Size(), true
			}
		}
	}
	return e.cached(d)
}

// storeBytes puts small verified content into the cache (over a damaged
// copy there: see cached).
func (e *exporter) storeBytes(b []byte) (verify.Digest, string, error) {
	d := verify.DigestBytes(b)
	tmp := e.tmpPath()
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return "", "", err
	}
	p, err := e.admit(tmp, d)
	return d, p, err
}

func selectVersions(all []string, c version.Constraints, latest int, every bool) []string {
	var vs []*version.Version
	seen := make(map[string]bool, len(all))
	for _, s := range all {
		v, err := version.NewVersion(s)
		// A list that names a version twice (a publisher's api.json) names
		// it once: twice, it would fill two of latest's places and be
		// carried twice.
		if err != nil || seen[s] {
			continue
		}
		seen[s] = true
		// Like Terraform, prereleases match only an exact constraint.
		if v.Prerelease() != "" && (c == nil || !strings.Contains(c.String(), s)) {
			continue
		}
		if c == nil || c.Check(v) {
			vs = append(vs, v)
		}
	}
	sort.Sort(sort.Reverse(version.Collection(vs)))
	if !every && latest > 0 && len(vs) > latest {
		vs = vs[:latest]
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Original()
	}
	sort.Slice(out, func(i, j int) bool { return dist.CompareVersions(out[i], out[j]) < 0 })
	return out
}

func constraintString(c version.Constraints) string {
	if c == nil {
		return "any version"
	}
	return c.String()
}

type pkgTask struct {
	req  *ProviderReq
	pv   *dist.ProviderVersion
	plat string
	// mirror is set for a package from a network mirror: the mirror's URL
	// and what it lists for this platform (see mirrorPackage).
	mirror  *url.URL
	archive registry.MirrorArchive
}

// providers resolves every provider request to versions and platforms
// (planProvider), then fetches and checks every package in parallel
// (providerPackage), then puts each version together (assemble).
func (e *exporter) providers(ctx context.Context, reqs []ProviderReq) ([]dist.ProviderVersion, error) {
	var out []*dist.ProviderVersion
	var of []*ProviderReq // the request of each of out
	var tasks []pkgTask
	seen := map[string]bool{}
	for i := range reqs {
		pvs, ts, err := e.planProvider(ctx, &reqs[i], seen)
		if err != nil {
			return nil, err
		}
		out, tasks = append(out, pvs...), append(tasks, ts...)
		for range pvs {
			of = append(of, &reqs[i])
		}
	}
	if !e.opt.DryRun {
		if err := e.fetchPackages(ctx, tasks); err != nil {
			return nil, err
		}
		if err := e.providerDocs(ctx, out, of); err != nil {
			return nil, err
		}
	}
	res := make([]dist.ProviderVersion, len(out))
	for i, p := range out {
		res[i] = *p
	}
	return res, nil
}

// planProvider selects the versions of one request and the platforms of
// each, from the request's source: its origin registry, or a network
// mirror (sourceFor).
func (e *exporter) planProvider(ctx context.Context, r *ProviderReq, seen map[string]bool) ([]*dist.ProviderVersion, []pkgTask, error) {
	src, names, byVer, err := e.providerVersions(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	if names, err = e.leaveOutWithdrawn(dist.KindProvider, r.Addr.String(), r.Why, r.Block, names, selector{r.Constraints, r.Latest, r.All}); err != nil {
		return nil, nil, err
	}
	sel := selectVersions(names, r.Constraints, r.Latest, r.All)
	if len(sel) == 0 {
		return nil, nil, fmt.Errorf("provider %s (%s): no version matches %s; %s has: %s", r.Addr, r.Why, constraintString(r.Constraints), src.name(), listVersions(names))
	}
	plats := r.Platforms
	if len(plats) == 0 {
		plats = e.req.Platforms
	}
	var out []*dist.ProviderVersion
	var tasks []pkgTask
	for _, ver := range sel {
		key := r.Addr.String() + " " + ver
		if seen[key] {
			continue
		}
		seen[key] = true
		info, archives, err := src.version(ctx, e.opt.Client, r.Addr, ver, byVer)
		if err != nil {
			return nil, nil, fmt.Errorf("provider %s %s (%s): %w", r.Addr, ver, r.Why, err)
		}
		pv := &dist.ProviderVersion{Host: r.Addr.Host, Namespace: r.Addr.Namespace, Type: r.Addr.Type, Version: ver, Protocols: info.Protocols}
		var have []string
		for _, p := range plats {
			if info.HasPlatform(p) {
				have = append(have, p)
			} else {
				e.opt.Log("notice: provider %s %s has no package for %s; skipping that platform", r.Addr, ver, p)
				e.res.Gaps = append(e.res.Gaps, fmt.Sprintf("%s %s: %s", r.Addr, ver, p))
			}
		}
		if len(have) == 0 {
			return nil, nil, fmt.Errorf("provider %s %s: none of the requested platforms (%s) is published", r.Addr, ver, strings.Join(plats, ", "))
		}
		e.res.Plan = append(e.res.Plan, fmt.Sprintf("provider %s %s: %s%s", r.Addr, ver, strings.Join(have, " "), src.planNote()))
		e.chose(dist.KindProvider, key, r.Block, r.Why)
		e.res.Planned = append(e.res.Planned, PlanItem{Kind: "provider", Address: r.Addr.String(), Version: ver, Platforms: have, Why: r.Why, Source: src.planSource()})
		e.res.reasons = append(e.res.reasons, e.reasonFor(dist.KindProvider, r.Addr.String(), ver, r.At, r.Why, r.Via))
		for _, p := range have {
			tasks = append(tasks, pkgTask{req: r, pv: pv, plat: p, mirror: src.mirror, archive: archives[p]})
		}
		out = append(out, pv)
	}
	return out, tasks, nil
}

// fetchPackages fetches and checks every package (at most Jobs at once)
// and adds each to its provider version.
func (e *exporter) fetchPackages(ctx context.Context, tasks []pkgTask) error {
	if e.opt.Progress != nil {
		e.opt.Progress.PackagesTotal.Store(int64(len(tasks)))
	}
	results := make([]dist.Package, len(tasks))
	sums := make([]*sumsEntry, len(tasks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.opt.Jobs)
	for i, t := range tasks {
		g.Go(func() error {
			what := fmt.Sprintf("%s/%s %s %s", t.req.Addr.Namespace, t.req.Addr.Type, t.pv.Version, t.plat)
			e.opt.Progress.begin(what)
			defer e.opt.Progress.end(what)
			pk, se, err := e.providerPackage(gctx, t)
			if err != nil {
				return err
			}
			results[i], sums[i] = pk, se
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return e.assemble(tasks, results, sums)
}

// assemble adds each package to its provider version with the version's
// SHA256SUMS: the publisher's (every platform must name the same one), or,
// for packages that only a network mirror's hashes vouch for (no sumsEntry),
// one the site writes and signs (siteShasums). A version is one or the
// other, never a mix.
func (e *exporter) assemble(tasks []pkgTask, results []dist.Package, sums []*sumsEntry) error {
	mirrorOnly := map[*dist.ProviderVersion]bool{}
	for i, t := range tasks {
		pv, se := t.pv, sums[i]
		if m, seen := mirrorOnly[pv]; seen && m != (se == nil) {
			return fmt.Errorf("provider %s: some of its packages were checked against the publisher's SHA256SUMS and others could not be (the origin registry answered only in part)\nhint: run the export again; nothing was written", pv)
		}
		mirrorOnly[pv] = se == nil
		switch {
		case se == nil:
			pv.MirrorHashesOnly, pv.Mirror = true, t.mirror.String()
		case pv.Shasums == "":
			pv.Shasums, pv.ShasumsSig, pv.SigningKeys, pv.SiteSigned = se.sums, se.sig, se.keys, se.site
			pv.ShasumsName = dist.ProviderShasumsName(pv.Type, pv.Version)
		case pv.Shasums != se.sums:
			return fmt.Errorf("provider %s: platforms point at different SHA256SUMS files", pv)
		}
		pv.Packages = append(pv.Packages, results[i])
	}
	done := map[*dist.ProviderVersion]bool{}
	for _, t := range tasks {
		if t.pv.MirrorHashesOnly && !done[t.pv] {
			done[t.pv] = true
			if err := e.siteShasums(t.pv); err != nil {
				return fmt.Errorf("provider %s: %w", t.pv, err)
			}
		}
	}
	return nil
}

func listVersions(vs []string) string {
	if len(vs) == 0 {
		return "no versions"
	}
	sort.Slice(vs, func(i, j int) bool { return dist.CompareVersions(vs[i], vs[j]) < 0 })
	if len(vs) > 15 {
		return strings.Join(vs[len(vs)-15:], ", ") + fmt.Sprintf(" (and %d older)", len(vs)-15)
	}
	return strings.Join(vs, ", ")
}

func (e *exporter) providerPackage(ctx context.Context, t pkgTask) (dist.Package, *sumsEntry, error) {
	if t.mirror != nil {
		return e.mirrorPackage(ctx, t)
	}
	osName, arch, _ := strings.Cut(t.plat, "_")
	what := fmt.Sprintf("provider %s %s %s", t.req.Addr, t.pv.Version, t.plat)
	meta, se, err := e.originShasums(ctx, t.req.Addr, t.pv.Version, osName, arch)
	if err != nil {
		return dist.Package{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	pk, err := e.signedPackage(ctx, t, meta, se, meta.DownloadURL, what)
	return pk, se, err
}

// originShasums asks the provider's origin registry for one platform's
// download document and fetches and verifies the SHA256SUMS it names.
func (e *exporter) originShasums(ctx context.Context, addr dist.Provider, version, osName, arch string) (*registry.PackageMeta, *sumsEntry, error) {
	meta, err := e.opt.Client.ProviderPackage(ctx, addr.Host, addr.Namespace, addr.Type, version, osName, arch)
	if err != nil {
		return nil, nil, err
	}
	se, err := e.shasums(ctx, addr, version, meta)
	if err != nil {
		return nil, nil, err
	}
	return meta, se, nil
}

// signedPackage fetches the package meta describes from u (the registry's
// download URL, or a network mirror's) and checks it against the verified
// SHA256SUMS se: its line must be the registry's shasum and the bytes must
// hash to it; then against the lock file, if the request has one.
func (e *exporter) signedPackage(ctx context.Context, t pkgTask, meta *registry.PackageMeta, se *sumsEntry, u, what string) (dist.Package, error) {
	osName, arch, _ := strings.Cut(t.plat, "_")
	line, ok := dist.ShasumFor(se.lines, meta.Filename)
	if !ok {
		return dist.Package{}, fmt.Errorf("%s: the signed SHA256SUMS has no line for %s\nnothing was written", what, meta.Filename)
	}
	if line != meta.Shasum {
		return dist.Package{}, fmt.Errorf("%s: the registry's shasum %s differs from the signed SHA256SUMS (%s)\nnothing was written", what, meta.Shasum, line)
	}
	d := verify.Digest("sha256:" + meta.Shasum)
	path, size, err := e.fetchPackage(ctx, d, u, meta.Filename, what, "the signed SHA256SUMS")
	if err != nil {
		return dist.Package{}, fmt.Errorf("%s: %w", what, err)
	}
	h1, info, err := e.scan(d, path)
	if err != nil {
		return dist.Package{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := checkLocked(t.req, what, h1, d); err != nil {
		return dist.Package{}, err
	}
	e.addBlob(d, size, dist.RoleProviderPackage, path)
	pk := dist.Package{OS: osName, Arch: arch, Filename: meta.Filename, Digest: d, Size: size, H1: h1}
	return pk, e.recordBuildInfo(&pk, info)
}

// recordBuildInfo keeps the Go build information of a package's plugin
// (read with its h1, check.ScanPackage) as a blob of the bundle, and for
// the SBOM.
func (e *exporter) recordBuildInfo(pk *dist.Package, info *goinfo.Info) error {
	doc := goinfo.Encode(info)
	bi, bp, err := e.storeBytes(doc)
	if err != nil {
		return err
	}
	e.addBlob(bi, int64(len(doc)), dist.RoleGoBuildInfo, bp)
	e.mu.Lock()
	e.res.BuildInfo[pk.Digest] = info
	e.mu.Unlock()
	pk.BuildInfo = bi
	return nil
}

// checkLocked checks a package against the request's lock file entry, if
// it has one: the package must match one of its hashes.
func checkLocked(r *ProviderReq, what, h1 string, d verify.Digest) error {
	lp := r.Locked
	if lp == nil || len(lp.Hashes) == 0 {
		return nil
	}
	for _, h := range lp.Hashes {
		if h == h1 || h == dist.ZH(d) {
			return nil
		}
	}
	return fmt.Errorf("%s: the package matches none of the hashes in .terraform.lock.hcl (h1 %s, zh %s)\nhint: the lock file was made from other builds (e.g. OpenTofu's rebuild vs HashiCorp's) or for other platforms; run 'terraform providers lock' for these platforms, or check the provider's source address",
		what, h1, dist.ZH(d))
}

// shasums fetches and verifies a provider version's SHA256SUMS once. The
// check is shared only by the platforms of one provider version whose
// download documents name the same SHA256SUMS, signature and keys: another
// provider (or registry) naming the same URLs has its own check against its
// own keys, so one registry's answer can never vouch for another's provider.
func (e *exporter) shasums(ctx context.Context, addr dist.Provider, version string, meta *registry.PackageMeta) (*sumsEntry, error) {
	key := sumsKey(addr, version, meta)
	e.mu.Lock()
	se := e.sigOnce[key]
	if se == nil {
		se = &sumsEntry{}
		e.sigOnce[key] = se
	}
	e.mu.Unlock()
	se.once.Do(func() { se.err = e.fetchShasums(ctx, addr, meta, se) })
	return se, se.err
}

// sumsKey identifies one SHA256SUMS check: provider address, version, both
// URLs and the digest of the key set the registry listed.
func sumsKey(addr dist.Provider, version string, meta *registry.PackageMeta) string {
	var keys bytes.Buffer
	for _, k := range meta.SigningKeys.GPGPublicKeys {
		fmt.Fprintf(&keys, "%q %q\n", k.KeyID, k.ASCIIArmor)
	}
	return strings.Join([]string{strings.ToLower(addr.String()), version, meta.ShasumsURL, meta.ShasumsSignatureURL,
		string(verify.DigestBytes(keys.Bytes()))}, "\n")
}

func (e *exporter) fetchShasums(ctx context.Context, addr dist.Provider, meta *registry.PackageMeta, se *sumsEntry) error {
	sums, err := e.opt.Client.Fetch(ctx, meta.ShasumsURL, dist.MaxShasumsSize)
	if err != nil {
		return err
	}
	sig, err := e.opt.Client.Fetch(ctx, meta.ShasumsSignatureURL, registry.MaxSignatureSize)
	if err != nil {
		return err
	}
	keys := meta.SigningKeys.GPGPublicKeys
	if len(keys) == 0 {
		if addr.Host != "registry.opentofu.org" {
			return fmt.Errorf("the registry lists no signing keys, so SHA256SUMS cannot be verified\nnothing was written")
		}
		if e.opt.SiteKey == nil {
			return errors.New("registry.opentofu.org lists no signing key for this provider; a site key is needed to re-sign its SHA256SUMS")
		}
		e.opt.Log("notice: %s: registry.opentofu.org lists no signing key; checking packages against SHA256SUMS and re-signing it with the site key", addr)
		if sig, keys, err = e.siteSign(sums); err != nil {
			return err
		}
		se.site = true
	} else {
		// One keyring of all listed keys: the limits on keys, signatures
		// and size (verify.ReadKeyring) then bound the whole set.
		var armors strings.Builder
		ids := make([]string, len(keys))
		for i, k := range keys {
			armors.WriteString(k.ASCIIArmor)
			armors.WriteString("\n")
			ids[i] = k.KeyID
		}
		kr, err := verify.ReadKeyring(strings.NewReader(armors.String()))
		if err != nil {
			hint := ""
			if errors.Is(err, verify.ErrKeyRefused) {
				hint = "\nhint: airgap reads only publisher keys it can check in bounded time (RSA 2048-8192 bits, DSA up to 3072); nothing was written"
			}
			return fmt.Errorf("signing keys %s from the registry: %w%s", strings.Join(ids, ", "), err, hint)
		}
		if _, err := verify.CheckDetached(kr, bytes.NewReader(sums), sig); err != nil {
			return fmt.Errorf("SHA256SUMS signature: %w\nhint: the checksums were not signed by the keys the registry lists; nothing was written", err)
		}
	}
	se.lines, se.valid, err = dist.ParseShasums(bytes.NewReader(sums))
	if err != nil {
		return err
	}
	var p string
	if se.sums, p, err = e.storeBytes(sums); err != nil {
		return err
	}
	e.addBlob(se.sums, int64(len(sums)), dist.RoleShasums, p)
	if se.sig, p, err = e.storeBytes(sig); err != nil {
		return err
	}
	e.addBlob(se.sig, int64(len(sig)), dist.RoleShasumsSig, p)
	se.keys = keys
	return nil
}

// siteSign signs sums (a SHA256SUMS) with the site key, as of a fixed
// time so that the same inputs give the same bundle, and returns the
// signature and the key list that goes with it.
func (e *exporter) siteSign(sums []byte) ([]byte, []dist.SigningKey, error) {
	if e.opt.SiteKey == nil {
		return nil, nil, errors.New("a site key is needed to sign it (--sign-key)")
	}
	var b bytes.Buffer
	if err := verify.SignDetachedAt(&b, e.opt.SiteKey, bytes.NewReader(sums), time.Unix(1, 0)); err != nil {
		return nil, nil, err
	}
	armor, err := verify.PublicArmor(e.opt.SiteKey)
	if err != nil {
		return nil, nil, err
	}
	return b.Bytes(), []dist.SigningKey{{KeyID: verify.KeyID(e.opt.SiteKey), ASCIIArmor: armor, Source: check.SiteKeySource}}, nil
}

// Bounds on what modules' own calls add to an export. The requests of the
// manifest or project are the user's; what their modules call is the
// registries' and module authors' (a hostile registry can answer every
// module with one that calls two more it makes up), so it is bounded:
// Terraform installs a chain of registry modules only as deep as its
// .terraform/modules/a.b.c… names fit in a file name, and real projects
// reach a few dozen modules and providers through their modules.
const (
	// MaxModuleDepth: registry modules calling registry modules, from a
	// requested one.
	MaxModuleDepth = 32
	// MaxDependencyModules: module versions an export fetches because
	// modules call them.
	MaxDependencyModules = 2000
	// MaxDependencyProviders: providers an export adds because modules
	// require them.
	MaxDependencyProviders = 1000
)

// modules resolves and fetches every requested module and, unless NoDeps,
// the registry modules and providers they call (within MaxModuleDepth,
// MaxDependencyModules and MaxDependencyProviders).
func (e *exporter) modules(ctx context.Context) ([]dist.ModuleVersion, []ProviderReq, error) {
	queue := append([]ModuleReq{}, e.req.Modules...)
	var out []dist.ModuleVersion
	var provs []ProviderReq
	seenMod := map[string]bool{}
	seenProv := map[string]bool{}
	for _, p := range e.req.Providers {
		seenProv[p.Addr.String()] = true
	}
	sites := map[string]*SiteModule{}
	for _, m := range e.req.Modules {
		if m.Site != nil {
			sites[strings.ToLower(m.Addr.String())] = m.Site
		}
	}
	// Breadth first, one level of calls at a time: the versions and
	// locations of a level are resolved in order (the plan's order), then
	// its modules are fetched, vendored and read in parallel (Jobs at a
	// time: unpacking and parsing a module is CPU work), and their results
	// taken in order, so the outcome does not depend on which finished
	// first.
	deps := 0
	for len(queue) > 0 {
		level := queue
		queue = nil
		var jobs []moduleJob
		for _, r := range level {
			if r.depth > MaxModuleDepth {
				return nil, nil, fmt.Errorf("module %s (%s): %w: modules calling modules more than %d deep\nhint: no real module tree is this deep (Terraform could not install it); the registry or a module author is making calls up; nothing was written", r.Addr, r.Why, ErrDependencies, MaxModuleDepth)
			}
			if r.Site == nil {
				// A module calling the site's own module by its address gets
				// it from the block that publishes it.
				r.Site = sites[strings.ToLower(r.Addr.String())]
			}
			sel, err := e.moduleVersions(ctx, r)
			if err != nil {
				return nil, nil, err
			}
			for _, ver := range sel {
				key := strings.ToLower(r.Addr.String()) + " " + ver
				if seenMod[key] {
					continue
				}
				seenMod[key] = true
				if r.depth > 0 {
					if deps++; deps > MaxDependencyModules {
						return nil, nil, fmt.Errorf("module %s %s (%s): %w: modules call more than %d module versions\nhint: name the modules you need in a manifest and export with --no-deps, or find which module calls so many; nothing was written", r.Addr, ver, r.Why, ErrDependencies, MaxDependencyModules)
					}
				}
				loc, err := e.moduleLocation(ctx, r, ver)
				if err != nil {
					return nil, nil, err
				}
				shown := dist.RedactSource(loc) // what the plan, the log and the bundle record
				e.res.Plan = append(e.res.Plan, fmt.Sprintf("module %s %s: %s", r.Addr, ver, shown))
				e.chose(dist.KindModule, r.Addr.String()+" "+ver, r.Block, r.Why)
				e.res.Planned = append(e.res.Planned, PlanItem{Kind: "module", Address: r.Addr.String(), Version: ver, Source: shown, Why: r.Why})
				e.res.reasons = append(e.res.reasons, e.reasonFor(dist.KindModule, r.Addr.String(), ver, r.At, r.Why, r.Via))
				if e.opt.DryRun && e.req.NoDeps {
					out = append(out, dist.ModuleVersion{Host: r.Addr.Host, Namespace: r.Addr.Namespace, Name: r.Addr.Name, System: r.Addr.System, Version: ver, Source: shown})
					continue
				}
				jobs = append(jobs, moduleJob{r: r, ver: ver, loc: loc})
			}
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(e.opt.Jobs)
		for i := range jobs {
			g.Go(func() error { return e.moduleJob(gctx, &jobs[i]) })
		}
		if err := g.Wait(); err != nil {
			return nil, nil, err
		}
		for _, j := range jobs {
			for _, w := range j.warnings {
				e.warn(w)
			}
			out = append(out, *j.mv)
			at, via := j.r.reason(j.mv)
			for _, d := range j.deps {
				d.depth = j.r.depth + 1
				d.At, d.Via = at, via
				queue = append(queue, d)
			}
			for _, p := range j.provs {
				p.At, p.Via = at, via
				if !seenProv[p.Addr.String()] {
					seenProv[p.Addr.String()] = true
					if provs = append(provs, p); len(provs) > MaxDependencyProviders {
						return nil, nil, fmt.Errorf("provider %s (%s): %w: modules require more than %d providers\nhint: name the providers you need in a manifest and export with --no-deps, or find which module requires so many; nothing was written", p.Addr, p.Why, ErrDependencies, MaxDependencyProviders)
					}
				}
			}
		}
	}
	return out, provs, nil
}

// reason is where the modules and providers that mv (the version r asked
// for) calls were asked for, and the chain of calls to them.
func (r *ModuleReq) reason(mv *dist.ModuleVersion) (at string, via []string) {
	at = r.At
	if at == "" {
		at = r.Why
	}
	return at, append(append([]string{}, r.Via...), mv.String())
}

// reasonFor is the dist.Reason of an entry a request resolved to, its
// position relative to the request's Base.
func (e *exporter) reasonFor(kind, addr, ver, at, why string, via []string) dist.Reason {
	if at == "" {
		at = why
	}
	if e.req.Base != "" {
		if rel, ok := strings.CutPrefix(filepath.ToSlash(at), filepath.ToSlash(filepath.Clean(e.req.Base))+"/"); ok {
			at = rel
		}
	}
	return dist.Reason{Kind: kind, Address: addr, Version: ver, Where: at, Via: via}
}

// requestedBy is the manifest's requested_by: the reason of each entry
// of cat (the first request that resolved to it; one per entry).
func (res *Result) requestedBy(cat *dist.Catalog) []dist.Reason {
	in := map[string]bool{}
	for _, p := range cat.Providers {
		in[dist.KindProvider+" "+p.Key()] = true
	}
	for _, m := range cat.Modules {
		in[dist.KindModule+" "+m.Key()] = true
	}
	var out []dist.Reason
	for _, r := range res.reasons {
		if k := r.Kind + " " + r.Key(); in[k] {
			in[k] = false
			out = append(out, r)
		}
	}
	dist.SortReasons(out)
	return out
}

// moduleJob is one module version to fetch, vendor and read.
type moduleJob struct {
	r        ModuleReq
	ver, loc string
	mv       *dist.ModuleVersion
	deps     []ModuleReq
	provs    []ProviderReq
	warnings []string // kept here, then recorded in the jobs' order
}

type jobWarnings struct{}

// jobWarn records a warning with the module job ctx carries (moduleJob),
// or at once.
func (e *exporter) jobWarn(ctx context.Context, w string) {
	if j, ok := ctx.Value(jobWarnings{}).(*moduleJob); ok {
		j.warnings = append(j.warnings, w)
		return
	}
	e.warn(w)
}

// moduleJob fetches j's module version and, unless NoDeps, reads the
// registry modules and providers it needs.
func (e *exporter) moduleJob(ctx context.Context, j *moduleJob) error {
	ctx = context.WithValue(ctx, jobWarnings{}, j)
	if e.opt.DryRun {
		// The plan must list what the module needs, so a dry run fetches
		// its archive (into the cache) to read it.
		e.opt.Log("dry run: fetching module %s %s into the cache to read its dependencies", j.r.Addr, j.ver)
	}
	// Each configuration file of the module is parsed once: vendoring,
	// the scan of what it needs and its docs read it through rd.
	rd := &moduleRead{parsed: tfconfig.NewParsed()}
	mv, root, work, err := e.fetchModule(ctx, j.r.Addr, j.ver, j.loc, j.r.Why, rd)
	if err != nil && j.r.Site != nil {
		if hint := siteHint(j.r.Site, j.ver, err); hint != "" {
			return fmt.Errorf("%w\nhint: %s", err, hint)
		}
	}
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	j.mv = mv
	if !e.req.NoDeps {
		if j.deps, j.provs, err = e.scanModule(ctx, root, mv, j.r.Why, rd.parsed); err != nil {
			return err
		}
	}
	if !e.opt.DryRun {
		e.moduleDocs(rd.root, rd.subdir, mv, rd.docs)
	}
	return nil
}

// moduleRead is what a module job reads of its module's tree once: the
// files parsed (tfconfig.Parsed) and, gathered from the same parses, what
// its docs need (docs.Parsed); root and subdir are the tree the module is
// read from (after vendoring) and the module's directory in it.
type moduleRead struct {
	parsed       *tfconfig.Parsed
	docs         *docs.Parsed
	root, subdir string
}

// moduleVersions selects the versions of r to export: from its registry,
// or for the site's own module from its block (all of them when r is the
// block itself; the newest match when a module calls it).
func (e *exporter) moduleVersions(ctx context.Context, r ModuleReq) ([]string, error) {
	var vs []string
	if r.Site != nil {
		if r.All && r.Constraints == nil {
			return r.Site.Versions, nil
		}
		vs = r.Site.Versions
	} else {
		var err error
		vs, err = e.opt.Client.ModuleVersions(ctx, r.Addr.Host, r.Addr.Namespace, r.Addr.Name, r.Addr.System)
		if err != nil {
			return nil, fmt.Errorf("module %s (%s): %w", r.Addr, r.Why, err)
		}
	}
	vs, err := e.leaveOutWithdrawn(dist.KindModule, r.Addr.String(), r.Why, r.Block, vs, selector{r.Constraints, r.Latest, r.All})
	if err != nil {
		return nil, err
	}
	sel := selectVersions(vs, r.Constraints, r.Latest, r.All)
	if len(sel) == 0 && r.Site != nil {
		return nil, fmt.Errorf("module %s (%s): no version matches %s; the module block at %s publishes: %s", r.Addr, r.Why, constraintString(r.Constraints), r.Site.At, listVersions(vs))
	}
	if len(sel) == 0 {
		return nil, fmt.Errorf("module %s (%s): no version matches %s; the registry has: %s", r.Addr, r.Why, constraintString(r.Constraints), listVersions(vs))
	}
	return sel, nil
}

// moduleLocation is where version ver of r is fetched from: its registry's
// download answer, or the site module block's source at that version.
func (e *exporter) moduleLocation(ctx context.Context, r ModuleReq, ver string) (string, error) {
	if r.Site != nil {
		return r.Site.Locations[ver], nil
	}
	loc, err := e.opt.Client.ModuleLocation(ctx, r.Addr.Host, r.Addr.Namespace, r.Addr.Name, r.Addr.System, ver)
	if err != nil {
		return "", fmt.Errorf("module %s %s: %w", r.Addr, ver, err)
	}
	return loc, nil
}

// siteHint says what to do when a site module version cannot be fetched,
// by what went wrong: a ref the repository lacks, a repository git could
// not clone, an archive that is not there; "" when the error says it
// already (a limit, an unsafe archive).
func siteHint(s *SiteModule, ver string, err error) string {
	ref, src := s.Refs[ver], dist.RedactSource(s.Locations[ver])
	switch {
	case errors.Is(err, getter.ErrRefNotFound):
		return fmt.Sprintf("%s publishes version %s from git ref %q; create that tag or branch in the repository, or set ref = \"…\" (it may use ${version}) in the module block", s.At, ver, ref)
	case errors.Is(err, getter.ErrCloneFailed):
		repo, _, _ := strings.Cut(src, "?ref=")
		return fmt.Sprintf("%s publishes version %s from %s, which git could not clone: check the repository's URL in the block's source (is it there, is it spelled right?) and that this machine may read it (git's credential helper for https://, an ssh key for ssh://)", s.At, ver, repo)
	case ref == "" && !errors.Is(err, getter.ErrArchiveLimit) && !errors.Is(err, getter.ErrUnsafeArchive):
		return fmt.Sprintf("%s publishes version %s from %s; check that the archive is there, or fix source in the module block", s.At, ver, src)
	}
	return ""
}

// fetchModule fetches version ver of addr from loc; why (the request's
// FILE:LINE, or "called by …") goes into its errors.
func (e *exporter) fetchModule(ctx context.Context, addr dist.Module, ver, loc, why string, rd *moduleRead) (mv *dist.ModuleVersion, root, work string, err error) {
	defer func() {
		if err != nil && work != "" {
			os.RemoveAll(work)
		}
	}()
	what := fmt.Sprintf("module %s %s", addr, ver)
	failed := what // in errors: what, and where it was asked for
	if why != "" {
		failed += " (" + why + ")"
	}
	src, err := getter.Parse(loc)
	if err != nil {
		return nil, "", work, fmt.Errorf("%s: %w", failed, err)
	}
	work, err = moduleWorkDir(e.opt.CacheDir)
	if err != nil {
		return nil, "", "", err
	}
	res, err := getter.FetchWith(ctx, src, work, e.getterOptions())
	if errors.Is(err, registry.ErrTooLarge) {
		return nil, "", work, fmt.Errorf("%s: %w\nhint: if the module archive really is this large, raise the limit with --max-module-size; nothing was written", failed, err)
	}
	if errors.Is(err, getter.ErrGitTooLarge) {
		return nil, "", work, fmt.Errorf("%s: %w\nhint: a repository with a long history can be larger than its files; if this one really is, raise the limit with --max-git-size; nothing was written", failed, err)
	}
	if err != nil {
		return nil, "", work, fmt.Errorf("%s: %w", failed, err)
	}
	// The tree the module is read from: vendoring's (the archive carried,
	// unpacked), else the fetched one. Its docs gather from every parse.
	rd.root = res.Root
	if !e.req.NoVendor {
		rd.root = vendorTree(work)
	}
	rd.subdir = res.Subdir
	if rd.subdir == "" {
		rd.subdir = "."
	}
	rd.docs = docs.NewParsed(rd.root, rd.subdir)
	rd.parsed.OnParse = rd.docs.File
	vendored, err := e.vendor(ctx, what, work, res, rd.parsed)
	if err != nil {
		return nil, "", work, fmt.Errorf("%s: %w", failed, err)
	}
	f, err := os.Open(res.Archive)
	if err != nil {
		return nil, "", work, err
	}
	d, n, err := verify.CopyDigest(io.Discard, f)
	f.Close()
	if err != nil {
		return nil, "", work, err
	}
	// The fresh archive replaces whatever the cache holds under d (see
	// cached): checking the old copy would cost as much as this rename.
	p, err := e.admit(res.Archive, d)
	if err != nil {
		return nil, "", work, err
	}
	e.addBlob(d, n, dist.RoleModuleArchive, p)
	zd, zn, err := e.moduleZip(p)
	if err != nil {
		return nil, "", work, fmt.Errorf("%s: making its zip: %w", failed, err)
	}
	shown := dist.RedactSource(loc) // credentials in a source are not recorded (verify, inventory and the catalog page show it)
	e.opt.Log("fetched %s from %s (%s)", what, shown, human(n))
	root = res.Root
	if res.Subdir != "" {
		root = filepath.Join(root, filepath.FromSlash(res.Subdir))
	}
	mv = &dist.ModuleVersion{Host: addr.Host, Namespace: addr.Namespace, Name: addr.Name, System: addr.System,
		Version: ver, Archive: d, Size: n, Subdir: res.Subdir, Source: shown, Commit: res.Commit, Zip: zd, ZipSize: zn, Vendored: vendored}
	return mv, root, work, nil
}

// scanModule finds the registry modules and providers a module needs, and
// warns about remote sources the offline clients could not fetch.
// why is where mv was asked for (for messages).
func (e *exporter) scanModule(ctx context.Context, dir string, mv *dist.ModuleVersion, why string, parsed *tfconfig.Parsed) ([]ModuleReq, []ProviderReq, error) {
	pkg := strings.TrimSuffix(dir, filepath.FromSlash("/"+mv.Subdir)) // local calls stay in the package
	cfg, err := parsed.LoadTreeIn(pkg, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("module %s: reading its configuration: %w", mv, err)
	}
	var mods []ModuleReq
	for _, c := range cfg.Modules {
		addr, _, ok, err := dist.ParseModuleSource(c.Source)
		if err != nil || !ok {
			if !e.req.NoVendor {
				continue // vendored, or warned about by vendor
			}
			rel, _ := filepath.Rel(dir, c.Pos)
			e.jobWarn(ctx, fmt.Sprintf("module %s calls %q at %s: a non-registry source; offline clients will fail to fetch it unless it is reachable there", mv, c.Source, dist.Printable(rel)))
			continue
		}
		r := ModuleReq{Addr: addr, Latest: 1, Why: "called by " + mv.String()}
		e.noteShorthand(mv, why, c.Source, addr)
		if c.VersionExpr != "" && c.Version == "" {
			// Its callers decide (Terraform ≥ 1.15 const variables,
			// OpenTofu's early evaluation): one export cannot.
			rel, _ := filepath.Rel(dir, c.Pos)
			w := fmt.Sprintf("module %s calls %s at %s with version = %s, which its callers set: exporting the newest version; name others in a manifest's module block", mv, addr, dist.Printable(rel), c.VersionExpr)
			e.res.Warnings = append(e.res.Warnings, w)
			e.opt.Log("warning: %s", w)
		}
		if c.Version != "" {
			if r.Constraints, err = parseConstraints(c.Version); err != nil {
				return nil, nil, fmt.Errorf("module %s: %s: version %q: %w", mv, c.Pos, c.Version, err)
			}
		}
		mods = append(mods, r)
	}
	var provs []ProviderReq
	for _, p := range cfg.Providers {
		addr, err := dist.ParseProviderSource(p.Source)
		if err != nil {
			return nil, nil, fmt.Errorf("module %s: %w", mv, err)
		}
		r := ProviderReq{Addr: addr, Latest: 1, Why: "required by module " + mv.String()}
		if p.Version != "" {
			if r.Constraints, err = parseConstraints(p.Version); err != nil {
				return nil, nil, fmt.Errorf("module %s: provider %s: %w", mv, addr, err)
			}
		}
		provs = append(provs, r)
	}
	return mods, provs, nil
}

// noteShorthand says, once per address, that a module's call of a
// registry module without a host ("example/subnet/aws") means
// registry.terraform.io to Terraform, which is what export follows, and
// registry.opentofu.org to OpenTofu, which this export does not carry
// unless the manifest asks for it: offline, 'tofu init' would then ask the
// appliance's registry.opentofu.org view for a module it does not have.
// why is where mv was asked for; an export --from a project has no
// manifest to add the module to, so there the note names the project's
// call and says that a manifest must name the module.
func (e *exporter) noteShorthand(mv *dist.ModuleVersion, why, source string, addr dist.Module) {
	if addr.Host != dist.DefaultRegistry || strings.Count(strings.SplitN(source, "//", 2)[0], "/") != 2 {
		return
	}
	tofu := dist.Module{Host: "registry.opentofu.org", Namespace: addr.Namespace, Name: addr.Name, System: addr.System}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shorthand == nil {
		e.shorthand = map[string]bool{}
		for _, m := range e.req.Modules {
			e.shorthand[strings.ToLower(m.Addr.String())] = true
		}
	}
	if key := strings.ToLower(tofu.String()); !e.shorthand[key] {
		e.shorthand[key] = true
		what := "module " + mv.String()
		todo := fmt.Sprintf("for OpenTofu clients add module %q to the manifest", tofu.String())
		if e.req.From != "" {
			if why != "" {
				what += " (" + why + ")" // the project's call that brought it
			}
			todo = fmt.Sprintf("for OpenTofu clients export module %q too: --from %s reads the project's own module calls, so name it in a manifest (module %q {}) and export that as well", tofu.String(), e.req.From, tofu.String())
		}
		e.opt.Log("note: %s calls %s without a host: Terraform installs it from registry.terraform.io (exported), OpenTofu from registry.opentofu.org, which this export does not carry; %s", what, dist.Printable(source), todo)
	}
}

func human(n int64) string { return dist.HumanSize(n) }
