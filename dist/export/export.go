package export

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter"
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
	// Log receives progress lines and notices.
	Log func(format string, a ...any)
	// Progress, if set, is kept up to date for a live display.
	Progress *Progress
}

// Progress is what an export is doing now; safe to read while it runs.
type Progress struct {
	PackagesTotal, PackagesDone atomic.Int64
	mu                          sync.Mutex
	active                      map[string]time.Time
}

func (p *Progress) begin(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.active == nil {
		p.active = map[string]time.Time{}
	}
	p.active[what] = time.Now()
	p.mu.Unlock()
}

func (p *Progress) end(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	delete(p.active, what)
	p.mu.Unlock()
	p.PackagesDone.Add(1)
}

// Active lists the downloads under way, oldest first.
func (p *Progress) Active() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.active))
	for k := range p.active {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return p.active[out[i]].Before(p.active[out[j]]) })
	return out
}

// Result is a finished export.
type Result struct {
	Manifest *bundle.Manifest
	Files    map[verify.Digest]string // blob -> path in the cache
	Plan     []string                 // what was resolved (also for --dry-run)
	Planned  []PlanItem               // the same, for machines
	Gaps     []string                 // requested platforms a provider version does not publish
	Warnings []string
	Bytes    int64 // downloaded this run
	Cached   int   // packages found in the cache
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
	for _, d := range []string{"blobs/sha256", "tmp", "partial"} {
		if err := os.MkdirAll(filepath.Join(opt.CacheDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("download cache: %w", err)
		}
	}
	tidyPartials(opt.CacheDir, time.Now().Add(-abandonedAfter))
	tidyModuleWork(opt.CacheDir, time.Now())
	e := &exporter{opt: opt, req: req, res: &Result{Files: map[verify.Digest]string{}},
		blobs: map[verify.Digest]bundle.Blob{}, sigOnce: map[string]*sumsEntry{}}
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
	m := &bundle.Manifest{Format: bundle.FormatVersion, Catalog: *cat, Withdraw: req.Withdraw, Reinstate: req.Reinstate}
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

func (e *exporter) tmpPath() string {
	var b [8]byte
	rand.Read(b[:])
	return filepath.Join(e.opt.CacheDir, "tmp", hex.EncodeToString(b[:]))
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

// cached returns the cached file for d if it is there with the right size
// (the cache admits only verified files).
func (e *exporter) cached(d verify.Digest) (string, int64, bool) {
	p := e.cachePath(d)
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return "", 0, false
	}
	return p, fi.Size(), true
}

// storeBytes puts small verified content into the cache.
func (e *exporter) storeBytes(b []byte) (verify.Digest, string, error) {
	d := verify.DigestBytes(b)
	if p, _, ok := e.cached(d); ok {
		return d, p, nil
	}
	tmp := e.tmpPath()
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return "", "", err
	}
	p, err := e.admit(tmp, d)
	return d, p, err
}

func selectVersions(all []string, c version.Constraints, latest int, every bool) []string {
	var vs []*version.Version
	for _, s := range all {
		v, err := version.NewVersion(s)
		if err != nil {
			continue
		}
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
	idx  int
}

func (e *exporter) providers(ctx context.Context, reqs []ProviderReq) ([]dist.ProviderVersion, error) {
	var out []*dist.ProviderVersion
	var tasks []pkgTask
	seen := map[string]bool{}
	for i := range reqs {
		r := &reqs[i]
		vs, err := e.opt.Client.ProviderVersions(ctx, r.Addr.Host, r.Addr.Namespace, r.Addr.Type)
		if err != nil {
			return nil, fmt.Errorf("provider %s (%s): %w", r.Addr, r.Why, err)
		}
		byVer := map[string]registry.ProviderVersion{}
		var names []string
		for _, v := range vs {
			byVer[v.Version] = v
			names = append(names, v.Version)
		}
		sel := selectVersions(names, r.Constraints, r.Latest, r.All)
		if len(sel) == 0 {
			return nil, fmt.Errorf("provider %s (%s): no version matches %s; the registry has: %s", r.Addr, r.Why, constraintString(r.Constraints), listVersions(names))
		}
		plats := r.Platforms
		if len(plats) == 0 {
			plats = e.req.Platforms
		}
		for _, ver := range sel {
			key := r.Addr.String() + " " + ver
			if seen[key] {
				continue
			}
			seen[key] = true
			info := byVer[ver]
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
				return nil, fmt.Errorf("provider %s %s: none of the requested platforms (%s) is published", r.Addr, ver, strings.Join(plats, ", "))
			}
			e.res.Plan = append(e.res.Plan, fmt.Sprintf("provider %s %s: %s", r.Addr, ver, strings.Join(have, " ")))
			e.res.Planned = append(e.res.Planned, PlanItem{Kind: "provider", Address: r.Addr.String(), Version: ver, Platforms: have, Why: r.Why})
			for _, p := range have {
				tasks = append(tasks, pkgTask{req: r, pv: pv, plat: p})
			}
			out = append(out, pv)
		}
	}
	if e.opt.DryRun {
		res := make([]dist.ProviderVersion, len(out))
		for i, p := range out {
			res[i] = *p
		}
		return res, nil
	}
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
		return nil, err
	}
	for i, t := range tasks {
		pv := t.pv
		se := sums[i]
		if pv.Shasums == "" {
			pv.Shasums, pv.ShasumsSig, pv.SigningKeys, pv.SiteSigned = se.sums, se.sig, se.keys, se.site
			pv.ShasumsName = fmt.Sprintf("terraform-provider-%s_%s_SHA256SUMS", pv.Type, pv.Version)
		} else if pv.Shasums != se.sums {
			return nil, fmt.Errorf("provider %s: platforms point at different SHA256SUMS files", pv)
		}
		pv.Packages = append(pv.Packages, results[i])
	}
	res := make([]dist.ProviderVersion, len(out))
	for i, p := range out {
		res[i] = *p
	}
	return res, nil
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
	osName, arch, _ := strings.Cut(t.plat, "_")
	what := fmt.Sprintf("provider %s %s %s", t.req.Addr, t.pv.Version, t.plat)
	meta, err := e.opt.Client.ProviderPackage(ctx, t.req.Addr.Host, t.req.Addr.Namespace, t.req.Addr.Type, t.pv.Version, osName, arch)
	if err != nil {
		return dist.Package{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	se, err := e.shasums(ctx, t.req.Addr, t.pv.Version, meta)
	if err != nil {
		return dist.Package{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	line, ok := dist.ShasumFor(se.lines, meta.Filename)
	if !ok {
		return dist.Package{}, nil, fmt.Errorf("%s: the signed SHA256SUMS has no line for %s\nnothing was written", what, meta.Filename)
	}
	if line != meta.Shasum {
		return dist.Package{}, nil, fmt.Errorf("%s: the registry's shasum %s differs from the signed SHA256SUMS (%s)\nnothing was written", what, meta.Shasum, line)
	}
	d := verify.Digest("sha256:" + meta.Shasum)
	path, size, err := e.fetchPackage(ctx, d, meta.DownloadURL, meta.Filename, what)
	if err != nil {
		return dist.Package{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	h1, err := dist.H1(path)
	if err != nil {
		return dist.Package{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	if lp := t.req.Locked; lp != nil && len(lp.Hashes) > 0 {
		match := false
		for _, h := range lp.Hashes {
			if h == h1 || h == dist.ZH(d) {
				match = true
			}
		}
		if !match {
			return dist.Package{}, nil, fmt.Errorf("%s: the package matches none of the hashes in .terraform.lock.hcl (h1 %s, zh %s)\nhint: the lock file was made from other builds (e.g. OpenTofu's rebuild vs HashiCorp's) or for other platforms; run 'terraform providers lock' for these platforms, or check the provider's source address",
				what, h1, dist.ZH(d))
		}
	}
	e.addBlob(d, size, dist.RoleProviderPackage, path)
	return dist.Package{OS: osName, Arch: arch, Filename: meta.Filename, Digest: d, Size: size, H1: h1}, se, nil
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
		var b bytes.Buffer
		if err := verify.SignDetachedAt(&b, e.opt.SiteKey, bytes.NewReader(sums), time.Unix(1, 0)); err != nil {
			return err
		}
		sig = b.Bytes()
		armor, err := verify.PublicArmor(e.opt.SiteKey)
		if err != nil {
			return err
		}
		keys = []dist.SigningKey{{KeyID: verify.KeyID(e.opt.SiteKey), ASCIIArmor: armor, Source: "airgap site key"}}
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

// modules resolves and fetches every requested module and, unless NoDeps,
// the registry modules and providers they call.
func (e *exporter) modules(ctx context.Context) ([]dist.ModuleVersion, []ProviderReq, error) {
	queue := append([]ModuleReq{}, e.req.Modules...)
	var out []dist.ModuleVersion
	var provs []ProviderReq
	seenMod := map[string]bool{}
	seenProv := map[string]bool{}
	for _, p := range e.req.Providers {
		seenProv[p.Addr.String()] = true
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		vs, err := e.opt.Client.ModuleVersions(ctx, r.Addr.Host, r.Addr.Namespace, r.Addr.Name, r.Addr.System)
		if err != nil {
			return nil, nil, fmt.Errorf("module %s (%s): %w", r.Addr, r.Why, err)
		}
		sel := selectVersions(vs, r.Constraints, r.Latest, r.All)
		if len(sel) == 0 {
			return nil, nil, fmt.Errorf("module %s (%s): no version matches %s; the registry has: %s", r.Addr, r.Why, constraintString(r.Constraints), listVersions(vs))
		}
		for _, ver := range sel {
			key := strings.ToLower(r.Addr.String()) + " " + ver
			if seenMod[key] {
				continue
			}
			seenMod[key] = true
			loc, err := e.opt.Client.ModuleLocation(ctx, r.Addr.Host, r.Addr.Namespace, r.Addr.Name, r.Addr.System, ver)
			if err != nil {
				return nil, nil, fmt.Errorf("module %s %s: %w", r.Addr, ver, err)
			}
			e.res.Plan = append(e.res.Plan, fmt.Sprintf("module %s %s: %s", r.Addr, ver, loc))
			e.res.Planned = append(e.res.Planned, PlanItem{Kind: "module", Address: r.Addr.String(), Version: ver, Source: loc, Why: r.Why})
			if e.opt.DryRun {
				if e.req.NoDeps {
					out = append(out, dist.ModuleVersion{Host: r.Addr.Host, Namespace: r.Addr.Namespace, Name: r.Addr.Name, System: r.Addr.System, Version: ver, Source: loc})
					continue
				}
				// The plan must list what the module needs, so a dry run
				// fetches its archive (into the cache) to read it.
				e.opt.Log("dry run: fetching module %s %s into the cache to read its dependencies", r.Addr, ver)
			}
			mv, root, work, err := e.fetchModule(ctx, r.Addr, ver, loc)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, *mv)
			if !e.req.NoDeps {
				deps, dprovs, err := e.scanModule(root, mv)
				os.RemoveAll(work)
				if err != nil {
					return nil, nil, err
				}
				queue = append(queue, deps...)
				for _, p := range dprovs {
					if !seenProv[p.Addr.String()] {
						seenProv[p.Addr.String()] = true
						provs = append(provs, p)
					}
				}
			} else {
				os.RemoveAll(work)
			}
		}
	}
	return out, provs, nil
}

func (e *exporter) fetchModule(ctx context.Context, addr dist.Module, ver, loc string) (mv *dist.ModuleVersion, root, work string, err error) {
	defer func() {
		if err != nil && work != "" {
			os.RemoveAll(work)
		}
	}()
	what := fmt.Sprintf("module %s %s", addr, ver)
	src, err := getter.Parse(loc)
	if err != nil {
		return nil, "", work, fmt.Errorf("%s: %w", what, err)
	}
	work, err = moduleWorkDir(e.opt.CacheDir)
	if err != nil {
		return nil, "", "", err
	}
	res, err := getter.FetchWith(ctx, src, work, e.getterOptions())
	if errors.Is(err, registry.ErrTooLarge) {
		return nil, "", work, fmt.Errorf("%s: %w\nhint: if the module archive really is this large, raise the limit with --max-module-size; nothing was written", what, err)
	}
	if errors.Is(err, getter.ErrGitTooLarge) {
		return nil, "", work, fmt.Errorf("%s: %w\nhint: a repository with a long history can be larger than its files; if this one really is, raise the limit with --max-git-size; nothing was written", what, err)
	}
	if err != nil {
		return nil, "", work, fmt.Errorf("%s: %w", what, err)
	}
	vendored, err := e.vendor(ctx, what, work, res)
	if err != nil {
		return nil, "", work, fmt.Errorf("%s: %w", what, err)
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
	p := e.cachePath(d)
	if _, _, ok := e.cached(d); !ok {
		if p, err = e.admit(res.Archive, d); err != nil {
			return nil, "", work, err
		}
	}
	e.addBlob(d, n, dist.RoleModuleArchive, p)
	zd, zn, err := e.moduleZip(p)
	if err != nil {
		return nil, "", work, fmt.Errorf("%s: making its zip: %w", what, err)
	}
	e.opt.Log("fetched %s from %s (%s)", what, loc, human(n))
	root = res.Root
	if res.Subdir != "" {
		root = filepath.Join(root, filepath.FromSlash(res.Subdir))
	}
	return &dist.ModuleVersion{Host: addr.Host, Namespace: addr.Namespace, Name: addr.Name, System: addr.System,
		Version: ver, Archive: d, Size: n, Subdir: res.Subdir, Source: loc, Commit: res.Commit, Zip: zd, ZipSize: zn, Vendored: vendored}, root, work, nil
}

// scanModule finds the registry modules and providers a module needs, and
// warns about remote sources the offline clients could not fetch.
func (e *exporter) scanModule(dir string, mv *dist.ModuleVersion) ([]ModuleReq, []ProviderReq, error) {
	pkg := strings.TrimSuffix(dir, filepath.FromSlash("/"+mv.Subdir)) // local calls stay in the package
	cfg, err := tfconfig.LoadTreeIn(pkg, dir)
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
			w := fmt.Sprintf("module %s calls %q at %s: a non-registry source; offline clients will fail to fetch it unless it is reachable there", mv, c.Source, dist.Printable(rel))
			e.res.Warnings = append(e.res.Warnings, w)
			e.opt.Log("warning: %s", w)
			continue
		}
		r := ModuleReq{Addr: addr, Latest: 1, Why: "called by " + mv.String()}
		if c.Version != "" {
			if r.Constraints, err = version.NewConstraint(c.Version); err != nil {
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
			if r.Constraints, err = version.NewConstraint(p.Version); err != nil {
				return nil, nil, fmt.Errorf("module %s: provider %s: %w", mv, addr, err)
			}
		}
		provs = append(provs, r)
	}
	return mods, provs, nil
}

func human(n int64) string { return dist.HumanSize(n) }
