package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/verify"
)

// Providers from a network mirror.
//
// Where a provider comes from follows the CLI configuration's
// provider_installation block as Terraform reads it, or --provider-mirror
// (Options.Methods): the methods whose include and exclude patterns match
// the provider are tried in order, and the first that has the provider
// (a direct method: its origin registry; a network_mirror: the mirror's
// index.json) is its source. Terraform merges the versions of every
// matching method; export takes them from one, so a provider is never put
// together from two places. Methods export cannot use (filesystem_mirror,
// dev_overrides, oci_mirror) are skipped; a provider only they match is an
// error naming the block.
//
// The mirror protocol carries no signatures. So for every package from a
// mirror, export asks the provider's origin registry (through its host
// block, if the CLI configuration has one) for that platform's download
// document and fetches and verifies the publisher's signed SHA256SUMS, as
// for a direct download; the mirror's bytes must hash to the signed line
// (or the export fails naming the mirror), and the package is then exactly
// what a direct export would carry: publisher-signed. Only when the origin
// cannot be reached at all (see unreachable) does the mirror's word have to
// do: the export refuses, unless Options.TrustMirrorHashes
// (--trust-mirror-hashes); then each package must match a hash the mirror
// lists for it (a zh: is checked while downloading, an h1: over the zip
// within the consistency check's bounds: check.ScanPackage), the provider
// version is marked "mirror hashes only" in the bundle
// (dist.ProviderVersion.MirrorHashesOnly) with the mirror's URL and hashes,
// and the site writes a SHA256SUMS of exactly the packages it carried and
// signs it with the site key, so that the appliance can serve it over the
// registry protocol (clients then report it as signed by the site's key).
// verify, inventory and the catalog page show the tier, and
// 'import --require-publisher-signatures' refuses it.

// providerSource is where a provider's versions come from.
type providerSource struct {
	mirror *url.URL // nil: the origin registry
	at     string   // the method's place, for messages
}

func (s providerSource) name() string {
	if s.mirror != nil {
		return "the network mirror " + s.mirror.Redacted()
	}
	return "the registry"
}

func (s providerSource) planNote() string {
	if s.mirror != nil {
		return " (from the network mirror " + s.mirror.Redacted() + ")"
	}
	return ""
}

func (s providerSource) planSource() string {
	if s.mirror != nil {
		return "network mirror " + s.mirror.Redacted()
	}
	return ""
}

// version returns the version's platforms (and, for a mirror, each
// platform's archive) from the source.
func (s providerSource) version(ctx context.Context, c *registry.Client, addr dist.Provider, ver string, byVer map[string]registry.ProviderVersion) (registry.ProviderVersion, map[string]registry.MirrorArchive, error) {
	if s.mirror == nil {
		return byVer[ver], nil, nil
	}
	archives, err := c.MirrorArchives(ctx, s.mirror, addr, ver)
	if err != nil {
		return registry.ProviderVersion{}, nil, err
	}
	info := registry.ProviderVersion{Version: ver}
	plats := make([]string, 0, len(archives))
	for p := range archives {
		plats = append(plats, p)
	}
	sort.Strings(plats)
	for _, p := range plats {
		osName, arch, _ := strings.Cut(p, "_")
		info.Platforms = append(info.Platforms, struct {
			OS   string `json:"os"`
			Arch string `json:"arch"`
		}{osName, arch})
	}
	return info, archives, nil
}

// sourcesFor lists the installation methods that apply to addr, in order:
// the origin registry when none is configured.
func (e *exporter) sourcesFor(addr dist.Provider) ([]registry.InstallMethod, error) {
	if len(e.opt.Methods) == 0 {
		return []registry.InstallMethod{{Kind: registry.MethodDirect, At: "default"}}, nil
	}
	var out []registry.InstallMethod
	var unusable []string
	for _, m := range e.opt.Methods {
		switch {
		case !m.Matches(addr):
		case m.Usable():
			out = append(out, m)
		default:
			unusable = append(unusable, m.Describe())
		}
	}
	if len(out) == 0 {
		also := ""
		if len(unusable) > 0 {
			also = " (only " + strings.Join(unusable, ", ") + ", which export cannot read)"
		}
		return nil, fmt.Errorf("provider %s: no method of the CLI configuration's provider_installation block applies to it%s\nhint: add a network_mirror or direct method that includes it, or give --provider-mirror URL", addr, also)
	}
	return out, nil
}

// providerVersions lists a request's versions from the first source that
// has the provider.
func (e *exporter) providerVersions(ctx context.Context, r *ProviderReq) (providerSource, []string, map[string]registry.ProviderVersion, error) {
	methods, err := e.sourcesFor(r.Addr)
	if err != nil {
		return providerSource{}, nil, nil, fmt.Errorf("%w (%s)", err, r.Why)
	}
	var missing []string
	for _, m := range methods {
		if m.Kind == registry.MethodNetworkMirror {
			names, err := e.opt.Client.MirrorVersions(ctx, m.URL, r.Addr)
			if errors.Is(err, registry.ErrNotFound) && len(methods) > 1 {
				missing = append(missing, m.Describe())
				continue
			}
			if err != nil {
				return providerSource{}, nil, nil, fmt.Errorf("provider %s (%s): %w", r.Addr, r.Why, err)
			}
			return providerSource{mirror: m.URL, at: m.At}, names, nil, nil
		}
		vs, err := e.opt.Client.ProviderVersions(ctx, r.Addr.Host, r.Addr.Namespace, r.Addr.Type)
		if errors.Is(err, registry.ErrNotFound) && len(methods) > 1 {
			missing = append(missing, m.Describe())
			continue
		}
		if err != nil {
			return providerSource{}, nil, nil, fmt.Errorf("provider %s (%s): %w", r.Addr, r.Why, err)
		}
		byVer := map[string]registry.ProviderVersion{}
		names := make([]string, 0, len(vs))
		for _, v := range vs {
			byVer[v.Version] = v
			names = append(names, v.Version)
		}
		return providerSource{at: m.At}, names, byVer, nil
	}
	return providerSource{}, nil, nil, fmt.Errorf("provider %s (%s): %w: not in %s", r.Addr, r.Why, registry.ErrNotFound, strings.Join(missing, ", nor in "))
}

// mirrorPackage fetches one platform's package from a network mirror and
// settles what vouches for it (see the top of this file). A nil sumsEntry
// means the mirror's hashes only.
func (e *exporter) mirrorPackage(ctx context.Context, t pkgTask) (dist.Package, *sumsEntry, error) {
	osName, arch, _ := strings.Cut(t.plat, "_")
	what := fmt.Sprintf("provider %s %s %s from the network mirror %s", t.req.Addr, t.pv.Version, t.plat, t.mirror.Redacted())
	meta, se, err := e.originShasums(ctx, t.req.Addr, t.pv.Version, osName, arch)
	switch {
	case err == nil:
		pk, err := e.signedPackage(ctx, t, meta, se, t.archive.URL, what)
		if err == nil && len(t.archive.Hashes) > 0 && !listed(t.archive.Hashes, pk) {
			w := fmt.Sprintf("%s: the hashes the mirror lists (%s) match none of the publisher-signed package's; it was carried as the publisher signed it, but terraform installing from that mirror would fail", what, strings.Join(t.archive.Hashes, ", "))
			e.warn(w)
		}
		if err == nil && len(t.pv.Protocols) == 0 && len(meta.Protocols) > 0 {
			e.mu.Lock()
			t.pv.Protocols = meta.Protocols
			e.mu.Unlock()
		}
		return pk, se, err
	case !unreachable(err):
		return dist.Package{}, nil, fmt.Errorf("%s: checking it against its origin registry %s: %w", what, t.req.Addr.Host, err)
	case !e.opt.TrustMirrorHashes:
		return dist.Package{}, nil, fmt.Errorf("%s: its origin registry %s cannot be reached (or does not publish it) to check the mirror's bytes against the publisher's signed SHA256SUMS: %w\nhint: the mirror protocol carries no signatures; export where the origin (or a host block for it) can be reached, or pass --trust-mirror-hashes to carry it marked \"mirror hashes only\" (the offline side sees that, and 'airgap import --require-publisher-signatures' refuses it); nothing was written", what, t.req.Addr.Host, err)
	}
	e.opt.Log("notice: %s: its origin %s cannot be reached (%v); carrying it with the mirror's hashes only (--trust-mirror-hashes)", what, t.req.Addr.Host, firstLine(err))
	pk, err := e.mirrorOnlyPackage(ctx, t, what)
	return pk, nil, err
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func (e *exporter) warn(w string) {
	e.mu.Lock()
	e.res.Warnings = append(e.res.Warnings, w)
	e.mu.Unlock()
	e.opt.Log("warning: %s", w)
}

// listed reports whether hashes lists pk's h1 or zh.
func listed(hashes []string, pk dist.Package) bool {
	for _, h := range hashes {
		if h == pk.H1 || h == pk.ZH() {
			return true
		}
	}
	return false
}

// unreachable reports whether err, from asking the origin registry, says
// only that it could not be reached or does not have the package — not
// that it answered and contradicted the mirror. Connection, proxy, DNS and
// TLS failures, timeouts, 401/403, other unexpected statuses (5xx after
// retries), a host with no provider service, and "not found" are
// unreachable; a bad signature, a digest that differs, a malformed or
// hostile answer (control characters, redirect loops or downgrades,
// oversized documents) are not, and fail the export whatever the flags.
func unreachable(err error) bool {
	var dnsErr *net.DNSError
	var urlErr *url.Error
	switch {
	case errors.Is(err, verify.ErrDigestMismatch), errors.Is(err, registry.ErrInvalidAnswer), errors.Is(err, registry.ErrTooLarge),
		errors.Is(err, registry.ErrTooManyRedirects), errors.Is(err, registry.ErrInsecureRedirect), errors.Is(err, registry.ErrUnsupportedScheme),
		errors.Is(err, registry.ErrForeignURL), errors.Is(err, registry.ErrCredentialsHelper), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, registry.ErrNotFound), errors.Is(err, registry.ErrUnauthorized), errors.Is(err, registry.ErrStatus),
		errors.Is(err, registry.ErrNoService), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &dnsErr), errors.As(err, &urlErr), registry.Transient(err):
		return true
	}
	return false
}

// mirrorOnlyPackage fetches a package a network mirror's hashes alone
// vouch for: with a zh: hash listed, the download is checked against it
// (and may come from the cache); otherwise it is downloaded whole and its
// h1 (computed within the consistency check's bounds) must be listed.
func (e *exporter) mirrorOnlyPackage(ctx context.Context, t pkgTask, what string) (dist.Package, error) {
	osName, arch, _ := strings.Cut(t.plat, "_")
	hashes := t.archive.Hashes
	if len(hashes) == 0 {
		return dist.Package{}, fmt.Errorf("%s: the mirror lists no h1: or zh: hash for it, so there is nothing to check its bytes against\nhint: without the origin registry only the mirror's hashes can vouch for a package; nothing was written", what)
	}
	filename := dist.ProviderPackageName(t.req.Addr.Type, t.pv.Version, osName, arch)
	var path, tmp string
	var d verify.Digest
	var size int64
	var err error
	if zh := firstZH(hashes); zh != "" {
		d = verify.Digest("sha256:" + zh)
		path, size, err = e.fetchPackage(ctx, d, t.archive.URL, filename, what, "the zh: hash the mirror lists")
	} else {
		tmp, d, size, err = e.fetchUnchecked(ctx, t.archive.URL)
		path = tmp
		defer os.Remove(tmp) // admitted (renamed) once it checks out
	}
	if err != nil {
		return dist.Package{}, fmt.Errorf("%s: %w", what, err)
	}
	// A package already in the cache (its zh: named it) may have its h1
	// and build information kept there; a fresh whole download is scanned.
	scan := e.scan
	if tmp != "" {
		scan = func(_ verify.Digest, path string) (string, *goinfo.Info, error) { return check.ScanPackage(path) }
	}
	h1, info, herr := scan(d, path)
	pk := dist.Package{OS: osName, Arch: arch, Filename: filename, Digest: d, Size: size, H1: h1, MirrorHashes: append([]string(nil), hashes...)}
	if herr != nil || !listed(hashes, pk) {
		why := fmt.Sprintf("(h1 %s, zh %s)", h1, pk.ZH())
		if herr != nil {
			why = fmt.Sprintf("(zh %s; not even a readable zip: %v)", pk.ZH(), herr)
		}
		return dist.Package{}, fmt.Errorf("%s: %w: its bytes %s match none of the hashes the mirror lists for it (%s)\nhint: the mirror is broken or the download was altered; nothing was written", what, verify.ErrDigestMismatch, why, strings.Join(hashes, ", "))
	}
	if tmp != "" {
		if path, err = e.admitDownload(tmp, d, size, what); err != nil {
			return dist.Package{}, err
		}
	}
	if err := checkLocked(t.req, what, h1, d); err != nil {
		return dist.Package{}, err
	}
	e.addBlob(d, size, dist.RoleProviderPackage, path)
	return pk, e.recordBuildInfo(&pk, info)
}

func firstZH(hashes []string) string {
	for _, h := range hashes {
		if hex, ok := strings.CutPrefix(h, "zh:"); ok {
			return hex
		}
	}
	return ""
}

// fetchUnchecked downloads u, whose digest nothing states beforehand, to a
// file in the cache's tmp/ (within MaxPackageSize); the caller checks it
// and admits it (admitDownload) or removes it.
func (e *exporter) fetchUnchecked(ctx context.Context, u string) (string, verify.Digest, int64, error) {
	tmp := e.tmpPath()
	d, n, err := e.opt.Client.Download(ctx, u, tmp, e.opt.MaxPackageSize)
	if errors.Is(err, registry.ErrTooLarge) {
		return "", "", 0, fmt.Errorf("%w\nhint: if the package really is this large, raise the limit with --max-package-size; nothing was kept", err)
	}
	if err != nil {
		return "", "", 0, err
	}
	e.mu.Lock()
	e.res.Bytes += n
	e.mu.Unlock()
	return tmp, d, n, nil
}

// admitDownload moves a checked download into the cache under its digest
// (over whatever the cache holds there).
func (e *exporter) admitDownload(tmp string, d verify.Digest, n int64, what string) (string, error) {
	p, err := e.admit(tmp, d)
	if err != nil {
		return "", err
	}
	e.opt.Log("fetched %s (%s)", what, human(n))
	return p, nil
}

// siteShasums writes the SHA256SUMS of a mirror-hashes-only provider
// version: one line per carried package, sorted by file name, signed with
// the site key (deterministically), and sets it on pv.
func (e *exporter) siteShasums(pv *dist.ProviderVersion) error {
	var b bytes.Buffer
	pks := append([]dist.Package(nil), pv.Packages...)
	sort.Slice(pks, func(i, j int) bool { return pks[i].Filename < pks[j].Filename })
	for _, pk := range pks {
		fmt.Fprintf(&b, "%s  %s\n", pk.Digest.Hex(), pk.Filename)
	}
	sig, keys, err := e.siteSign(b.Bytes())
	if err != nil {
		return fmt.Errorf("writing the SHA256SUMS of its mirror hashes: %w", err)
	}
	sd, sp, err := e.storeBytes(b.Bytes())
	if err != nil {
		return err
	}
	gd, gp, err := e.storeBytes(sig)
	if err != nil {
		return err
	}
	e.addBlob(sd, int64(b.Len()), dist.RoleShasums, sp)
	e.addBlob(gd, int64(len(sig)), dist.RoleShasumsSig, gp)
	pv.ShasumsName = dist.ProviderShasumsName(pv.Type, pv.Version)
	pv.Shasums, pv.ShasumsSig, pv.SigningKeys = sd, gd, keys
	e.mu.Lock()
	e.res.MirrorHashesOnly = append(e.res.MirrorHashesOnly, fmt.Sprintf("%s (%s)", pv, pv.Mirror))
	e.mu.Unlock()
	return nil
}
