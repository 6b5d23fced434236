package check

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/modzip"
	"github.com/airgap/airgap/dist/portable"
	"github.com/airgap/airgap/dist/zipdir"
	"github.com/airgap/airgap/verify"
)

// Limits of the consistency check. A provider zip holds the plugin and a few
// text files; HashiCorp's largest packages are about 200 MB zipped and under
// 1 GB unzipped.
const (
	// MaxZipEntries bounds the files in a provider zip whose h1 is computed;
	// MaxZipDirectory bounds the bytes of its central directory (names,
	// extra fields, comments). Both are counted by zipdir.Check in a fixed
	// buffer before archive/zip reads the directory into memory, so that
	// costs at most ≈ MaxZipDirectory + MaxZipEntries × 300 bytes ≈ 1.1 MiB
	// per zip. Real provider zips hold 1–5 files with short names.
	MaxZipEntries   = 256
	MaxZipDirectory = 1 << 20
	// MaxZipUnpacked bounds the declared unpacked size of a provider zip (the
	// h1 hash reads every file unpacked, and archive/zip refuses files
	// longer than declared).
	MaxZipUnpacked = 8 << 30
	// MaxZipRatio bounds a provider zip's declared unpacked size to this
	// many times its packed size, but never below MinZipUnpackedLimit: the
	// h1 hash costs CPU in proportion to the unpacked bytes, and deflate
	// packs zeros ~1000:1, so without it a 1 MiB package could cost the
	// transfer station a GiB of hashing. Real provider binaries pack 2–5:1.
	MaxZipRatio         = 100
	MinZipUnpackedLimit = 64 << 20
	// SiteResignHost is the only origin whose providers may carry a site
	// re-signature: it may list no publisher keys (see
	// docs/trust-model.md); 'airgap export' refuses every other host without keys.
	SiteResignHost = "registry.opentofu.org"
	// SiteKeySource marks the key export adds for a site re-signature.
	SiteKeySource = "airgap site key"
	// SignatureSlack is how much later than the bundle's own signature a
	// provider's SHA256SUMS signature may be dated: the publisher's clock
	// and the exporting machine's may disagree by this much.
	SignatureSlack = 10 * time.Minute
	// MaxClockAhead is how far past this machine's clock a bundle's
	// signature may be dated: time zones and a wrong clock on either side
	// stay within a day; a signature from next year does not.
	MaxClockAhead = 24 * time.Hour
)

// timeNow is the clock of a Checker whose Options.Now is zero.
var timeNow = time.Now

// stamp formats a signature time for messages.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// checkBundleTime refuses a bundle signature dated more than MaxClockAhead
// after now: this machine cannot know when a bundle was really signed,
// but it knows one was not signed next year. (A wrong clock here is told
// apart in the hint.)
func checkBundleTime(signed, now time.Time) error {
	if signed.IsZero() || !signed.After(now.Add(MaxClockAhead)) {
		return nil
	}
	return fmt.Errorf("%w: the bundle's signature is dated %s, more than a day after this machine's clock (%s)\n"+
		"hint: either this machine's clock is wrong (check it: date -u) or the signature's date was forged; do not import the bundle until you know which",
		bundle.ErrSignatureTime, stamp(signed), stamp(now))
}

// checkSumsTime refuses a provider's SHA256SUMS signature dated where it
// cannot be: more than MaxClockAhead after this machine's clock (now), or
// more than SignatureSlack after the bundle's own signature — the bundle
// was signed after everything in it was, so a later date was forged (a
// signature "from 2099" would outlive any expiry or revocation judged by
// date). The second rule needs a signature time that is the time of
// signing: a bundle with manifest.Created (SOURCE_DATE_EPOCH) was signed
// by older airgaps at that date instead, so for those only the first rule
// holds (export now signs such bundles no earlier than what they carry).
func checkSumsTime(entry string, created, bundleSigned, now time.Time, reproducible bool) error {
	if created.After(now.Add(MaxClockAhead)) {
		return fmt.Errorf("%w: %s: its SHA256SUMS signature is dated %s, more than a day after this machine's clock (%s)\n"+
			"hint: the publisher's signature carries a forged date (or this machine's clock is wrong: check it); do not import the bundle",
			bundle.ErrSignatureTime, entry, stamp(created), stamp(now))
	}
	if reproducible || bundleSigned.IsZero() || !created.After(bundleSigned.Add(SignatureSlack)) {
		return nil
	}
	return fmt.Errorf("%w: %s: its SHA256SUMS signature is dated %s, after the bundle itself was signed (%s): a bundle cannot carry a signature made after it\n"+
		"hint: the date was forged, or the exporting machine's clock was far behind; do not import the bundle; export it again and check the publisher's signature",
		bundle.ErrSignatureTime, entry, stamp(created), stamp(bundleSigned))
}

func inconsistent(entry, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s%s", bundle.ErrInconsistent, entry, fmt.Sprintf(format, a...), bundle.HintInconsistent)
}

// Manifest checks what a manifest says about itself, before any blob is
// read: Validate (every blob listed once and used, every name in the registry
// address grammar, every version semver), and then
//
//   - no provider version or module version is listed twice (compared as
//     clients compare them: case-insensitively, by canonical version);
//   - every SHA256SUMS file is named terraform-provider-TYPE_VERSION_SHA256SUMS
//     and every package terraform-provider-TYPE_VERSION_OS_ARCH.zip for the
//     type, version and platform the catalog lists it under, as every
//     registry names them: the names in the publisher's signed SHA256SUMS
//     are what tie its signature to a type and version, so the publisher's
//     real files of one version cannot be listed as another version or type;
//   - one module archive is not given two different zips;
//   - one zip (one digest) is not given two different h1 hashes;
//   - a site re-signature is marked (SiteSigned), is for SiteResignHost
//     only, and carries exactly one key; an unmarked provider carries at
//     least one key and none marked as the site's;
//   - a provider version with mirror hashes only is marked
//     (MirrorHashesOnly), names its mirror, carries the site key alone and
//     each package the mirror's hashes, its own among them (checkTier); no
//     other provider version has any of that. Its SHA256SUMS must then be
//     signed by the bundle's signer and list exactly its packages (Finish);
//     everything else is as strict as for publisher-signed providers;
//   - SHA256SUMS files and signatures are within their size limits;
//   - one zip is not given two different Go build information documents,
//     and a bundle with an SBOM records build information for every
//     package (the SBOM is built from it);
//   - gates (checkGates): every result is of a gate the bundle lists, for
//     the kind of entry it is on, with that gate's tool, and its status
//     agrees with its exit status, findings and the gate's fail level, and
//     its report_bytes with its report's size; every entry of a gate's kind
//     has its result;
//   - reports, build information and the SBOM are within their size limits,
//     and the build information an SBOM is built from, in all
//     (checkBuildInfoTotal).
//
// What needs the blobs' bytes is checked by a Checker.
func Manifest(m *bundle.Manifest) error {
	if err := m.Validate(); err != nil {
		return err
	}
	sizes := make(map[verify.Digest]int64, len(m.Blobs))
	for _, b := range m.Blobs {
		sizes[b.Digest] = b.Size
	}
	if err := checkSizes(m, sizes); err != nil {
		return err
	}
	if err := checkBuildInfoTotal(m, sizes); err != nil {
		return err
	}
	if err := checkChainSizes(m, sizes); err != nil {
		return err
	}
	if err := checkGates(m, sizes); err != nil {
		return err
	}
	provs := make(map[string]string, len(m.Catalog.Providers))
	h1s := map[verify.Digest]string{}
	bis := map[verify.Digest]verify.Digest{}
	for _, p := range m.Catalog.Providers {
		entry := "provider " + p.String()
		if prev, dup := provs[p.Key()]; dup {
			return inconsistent(entry, "listed twice in one bundle (also as %s)", prev)
		}
		provs[p.Key()] = p.String()
		if want := dist.ProviderShasumsName(p.Type, p.Version); p.ShasumsName != want {
			return inconsistent(entry, "its SHA256SUMS file is named %s, not %s: it is not this version's", p.ShasumsName, want)
		}
		if sizes[p.Shasums] > dist.MaxShasumsSize {
			return inconsistent(entry, "its SHA256SUMS is %d bytes, over the %d-byte limit", sizes[p.Shasums], dist.MaxShasumsSize)
		}
		if sizes[p.ShasumsSig] > bundle.MaxSignatureSize {
			return inconsistent(entry, "its SHA256SUMS signature is %d bytes, over the %d-byte limit", sizes[p.ShasumsSig], bundle.MaxSignatureSize)
		}
		site := 0
		for _, k := range p.SigningKeys {
			if k.Source == SiteKeySource {
				site++
			}
		}
		if err := checkTier(p, site); err != nil {
			return err
		}
		switch {
		case p.SiteSigned && p.Host != SiteResignHost:
			return inconsistent(entry, "marked as re-signed by the site key, which only %s providers may be (its registry must publish keys)", SiteResignHost)
		case p.SiteSigned && len(p.SigningKeys) != 1:
			return inconsistent(entry, "marked as re-signed by the site key but carries %d keys, not the site key alone", len(p.SigningKeys))
		case !p.SiteSigned && !p.MirrorHashesOnly && len(p.SigningKeys) == 0:
			return inconsistent(entry, "carries no publisher signing key")
		case !p.SiteSigned && !p.MirrorHashesOnly && site > 0:
			return inconsistent(entry, "carries the site key as a publisher key without being marked as re-signed")
		}
		for _, pk := range p.Packages {
			what := entry + " " + pk.Platform()
			if want := dist.ProviderPackageName(p.Type, p.Version, pk.OS, pk.Arch); pk.Filename != want {
				return inconsistent(what, "the package file %s is not for %s of this type and version (its name would be %s)", pk.Filename, pk.Platform(), want)
			}
			if prev, ok := h1s[pk.Digest]; ok && prev != pk.H1 {
				return inconsistent(what, "package %s is listed with two h1 hashes (%s and %s)", pk.Digest.Short(), prev, pk.H1)
			}
			h1s[pk.Digest] = pk.H1
			if prev, ok := bis[pk.Digest]; ok && prev != pk.BuildInfo {
				return inconsistent(what, "package %s is listed with two Go build information documents", pk.Digest.Short())
			}
			bis[pk.Digest] = pk.BuildInfo
			if m.SBOM != "" && pk.BuildInfo == "" {
				return inconsistent(what, "the bundle has an SBOM but no Go build information for this package, which the SBOM is built from")
			}
		}
	}
	mods := make(map[string]string, len(m.Catalog.Modules))
	zips := map[verify.Digest]verify.Digest{}
	for _, mv := range m.Catalog.Modules {
		if prev, dup := mods[mv.Key()]; dup {
			return inconsistent("module "+mv.String(), "listed twice in one bundle (also as %s)", prev)
		}
		mods[mv.Key()] = mv.String()
		if mv.Zip == "" {
			continue
		}
		if prev, ok := zips[mv.Archive]; ok && prev != mv.Zip {
			return inconsistent("module "+mv.String(), "its archive %s is listed with two zips (%s and %s)", mv.Archive.Short(), prev.Short(), mv.Zip.Short())
		}
		zips[mv.Archive] = mv.Zip
	}
	return nil
}

// checkTier checks what the mirror-hashes-only mark demands (see
// dist.ProviderVersion.MirrorHashesOnly): a marked provider version names
// its mirror, is not also marked as a site re-signature, carries the site key
// alone, and each package records the mirror's hashes, its own h1 or zh
// among them; an unmarked one has none of that. site counts the keys marked
// as the site's.
func checkTier(p dist.ProviderVersion, site int) error {
	entry := "provider " + p.String()
	if !p.MirrorHashesOnly {
		if p.Mirror != "" {
			return inconsistent(entry, "names a network mirror but is not marked as carrying mirror hashes only")
		}
		for _, pk := range p.Packages {
			if len(pk.MirrorHashes) > 0 {
				return inconsistent(entry+" "+pk.Platform(), "records mirror hashes but is not marked as carrying mirror hashes only")
			}
		}
		return nil
	}
	switch {
	case p.SiteSigned:
		return inconsistent(entry, "marked both as re-signed by the site key and as carrying mirror hashes only")
	case p.Mirror == "":
		return inconsistent(entry, "marked as carrying mirror hashes only but names no mirror")
	case len(p.SigningKeys) != 1 || site != 1:
		return inconsistent(entry, "marked as carrying mirror hashes only, but carries %d keys, not the site key alone", len(p.SigningKeys))
	}
	for _, pk := range p.Packages {
		found := false
		for _, h := range pk.MirrorHashes {
			found = found || h == pk.H1 || h == pk.ZH()
		}
		if !found {
			return inconsistent(entry+" "+pk.Platform(), "marked as carrying mirror hashes only, but none of the mirror's hashes it records (%s) is the package's h1 or zh", strings.Join(pk.MirrorHashes, ", "))
		}
	}
	return nil
}

// checkSizes bounds the blobs the check reads whole: reports, build
// information documents and the SBOM.
func checkSizes(m *bundle.Manifest, sizes map[verify.Digest]int64) error {
	for _, b := range m.Blobs {
		limit := int64(-1)
		switch b.Role {
		case dist.RoleGateReport:
			limit = bundle.MaxReportSize
		case dist.RoleGoBuildInfo:
			limit = goinfo.MaxDocument
		case dist.RoleSBOM:
			limit = bundle.MaxSBOMSize
		}
		if limit >= 0 && sizes[b.Digest] > limit {
			return inconsistent(m.Describe(b.Digest), "it is %d bytes, over the %d-byte limit", sizes[b.Digest], limit)
		}
	}
	return nil
}

// checkBuildInfoTotal bounds the Go build information the SBOM check
// holds and builds from: for a bundle with an SBOM, the documents of all
// its packages (counted per package, as the SBOM lists each package's
// modules) must be at most MaxSBOMSize bytes in all. The SBOM repeats every
// module's path and version in more bytes than its document spends, so an
// SBOM within MaxSBOMSize (export refuses a larger one) never describes
// more. Without the bound, a bundle of many small zips whose plugins each
// carry goinfo.MaxModInfo of module lines made the check hold about 4 MiB
// per package, and build an SBOM of gigabytes, before it could say no.
func checkBuildInfoTotal(m *bundle.Manifest, sizes map[verify.Digest]int64) error {
	if m.SBOM == "" {
		return nil
	}
	var total int64
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			if total += sizes[pk.BuildInfo]; total > bundle.MaxSBOMSize {
				return inconsistent("the bundle's SBOM", "the Go build information of its packages is over %d bytes in all, more than an SBOM within its %d-byte limit can describe", bundle.MaxSBOMSize, bundle.MaxSBOMSize)
			}
		}
	}
	return nil
}

// checkGates holds the gate results on every entry to the gates the bundle
// lists (see Manifest), and each result's report_bytes to the size of
// its report blob (what 'verify --json' shows is what was checked). A
// bundle exported from a store lists no gates: each result it carries is
// held to the definition in the hop that brought it (checkChain), so here
// only its report's size is.
func checkGates(m *bundle.Manifest, sizes map[verify.Digest]int64) error {
	gates := make(map[string]dist.Gate, len(m.Gates))
	for _, g := range m.Gates {
		gates[g.Name] = g
	}
	carried := len(m.Chain) > 0
	check := func(entry, kind string, rs []dist.GateResult) error {
		have := map[string]bool{}
		for _, r := range rs {
			if carried {
				if r.ReportBytes != sizes[r.Report] {
					return inconsistent(entry, "its gate %s result says its report is %d bytes, but the report (%s) is %d bytes", r.Gate, r.ReportBytes, r.Report.Short(), sizes[r.Report])
				}
				continue
			}
			g, ok := gates[r.Gate]
			if err := checkGateResult(entry, kind, r, g, ok, sizes[r.Report]); err != nil {
				return err
			}
			have[r.Gate] = true
		}
		for _, g := range m.Gates {
			if g.For == kind && !have[g.Name] {
				return inconsistent(entry, "it has no result of gate %s, which the bundle says ran over every entry of its kind (%s)", g.Name, g.For)
			}
		}
		return nil
	}
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			if err := check("provider "+p.String()+" "+pk.Platform(), dist.GateProviders, pk.Gates); err != nil {
				return err
			}
		}
	}
	for _, mv := range m.Catalog.Modules {
		if err := check("module "+mv.String(), dist.GateModules, mv.Gates); err != nil {
			return err
		}
	}
	return nil
}

// checkGateResult holds one result r on entry (of kind) to the gate g
// that produced it (ok: the bundle lists g): of a listed gate over entries
// of this kind, the gate's tool, a status its exit status and findings
// give under the gate's fail level, and report_bytes its report's size.
func checkGateResult(entry, kind string, r dist.GateResult, g dist.Gate, ok bool, reportSize int64) error {
	passes := dist.Passes(r.ExitCode, r.Findings, g.FailLevel)
	switch {
	case !ok:
		return inconsistent(entry, "it has a result of gate %s, which the bundle does not list", r.Gate)
	case g.For != kind:
		return inconsistent(entry, "it has a result of gate %s, which runs over %s", r.Gate, g.For)
	case r.ReportBytes != reportSize:
		return inconsistent(entry, "its gate %s result says its report is %d bytes, but the report (%s) is %d bytes", r.Gate, r.ReportBytes, r.Report.Short(), reportSize)
	case r.Tool != g.Tool:
		return inconsistent(entry, "its gate %s result names the tool %q, but the gate ran %q", r.Gate, dist.Printable(r.Tool), dist.Printable(g.Tool))
	case r.Status == dist.GatePassed && !passes:
		return inconsistent(entry, "gate %s is recorded as passed, but exit status %d with %s fails it", r.Gate, r.ExitCode, r.Findings.String())
	case r.Status == dist.GateWaived && passes:
		return inconsistent(entry, "gate %s is recorded as waived, but exit status %d with %s passes it", r.Gate, r.ExitCode, r.Findings.String())
	}
	return nil
}

// Options configure a Checker.
type Options struct {
	// Signer signed the manifest; a site re-signature must be by this key.
	Signer verify.Signer
	// SiteKeys are the keys trusted to sign bundles (the import or verify
	// keyring). No provider not marked as re-signed may have its SHA256SUMS
	// signed by one of them, nor by Signer: a site key is never a publisher
	// key.
	SiteKeys openpgp.EntityList
	// SpoolDir is where Spool writes blobs ("" means the system temp dir).
	SpoolDir string
	// Have returns a file holding a blob that does not stream by (omitted
	// from a delta, or one the caller already has). Nil, or false: the
	// checks that need it are deferred (listed in the report).
	Have func(d verify.Digest) (path string, ok bool)
	// Known reports that the caller already knows (has checked) that the
	// zip with digest d has h1 and the Go build information buildInfo (a
	// store that has the package); Finish then does not read the zip
	// again, and takes the build information from the blob (Have).
	Known func(d verify.Digest, h1 string, buildInfo verify.Digest) bool
	// SignedAt is when the bundle's signature says it was made
	// (Reader.SignedAt). Signature times are checked against it and Now,
	// never against the offline clock alone: no provider's SHA256SUMS
	// signature may be dated more than SignatureSlack after it (a bundle
	// cannot carry a signature made after it was signed; see
	// checkSumsTime for bundles made with SOURCE_DATE_EPOCH), and neither
	// it nor any SHA256SUMS signature may be dated more than MaxClockAhead
	// after Now. Zero skips the checks against it.
	SignedAt time.Time
	// Now is this machine's clock (zero: time.Now), for SignedAt and for
	// reporting keys that have expired since they signed.
	Now time.Time
	// ChainKeyring is the chain keyring of the store an import is
	// forecast for (verify --against: its import policy's chain block):
	// each hop signed by one of its keys has its signature checked again
	// with the keyring's copy of the key, as that import's chain policy
	// will (HopCheck.KeyringErr). Nil: not checked here.
	ChainKeyring openpgp.EntityList
}

// Result says what a Checker checked (the "checks" object of
// 'airgap verify --json').
type Result struct {
	Signatures int `json:"sha256sums_signatures"`  // SHA256SUMS signatures checked against the carried keys
	Packages   int `json:"packages_in_sha256sums"` // packages found with their sha256 in a signed SHA256SUMS
	H1         int `json:"h1_hashes"`              // zips whose h1 was computed and compared
	ModuleZips int `json:"module_zips"`            // module zips rebuilt from their archives and compared
	// ModuleTrees: module archives whose names were checked (package
	// portable: every one must be the same file on every file system).
	ModuleTrees int `json:"module_trees"`
	BuildInfo   int `json:"build_info"` // Go build information documents read again from the zips and compared
	// BuildInfoNone: of those, the documents that say the plugin has no
	// Go build information (and why).
	BuildInfoNone int `json:"build_info_none"`
	// Docs: documentation blobs read whole and held to their form
	// (docs.Check for a provider's tar, with its page and byte counts
	// compared; docs.ParseModuleDocs for a module's).
	Docs    int `json:"docs"`
	Reports int `json:"gate_reports"` // gate reports whose SARIF findings were counted again and compared
	// SBOM is "checked" (built again from the manifest and the checked
	// build information, and equal to the signed one), "deferred" (some
	// build information is in blobs a delta omits) or "none" (the bundle
	// has no SBOM).
	SBOM string `json:"sbom"`
	// sbom writes the SBOM as checked (the signed bytes) again, for
	// WriteSBOM ('verify --sbom').
	sbom func(io.Writer) error
	// Deferred lists what could not be checked without the store (a delta's
	// omitted blobs); import checks it.
	Deferred []string `json:"deferred"`
	// MirrorHashesOnly counts the packages among Packages whose SHA256SUMS
	// the exporting site wrote from a network mirror's hashes (see
	// dist.ProviderVersion.MirrorHashesOnly): no publisher vouches for them.
	MirrorHashesOnly int `json:"mirror_hashes_only"`
	// Signed holds, for each provider version whose signature was checked
	// (catalog order), what its SHA256SUMS signature says: the facts
	// 'airgap verify' shows and the import's publisher-key pins decide on.
	Signed []SignatureFacts `json:"-"`
	byKey  map[string]int   // Signed by provider key, built by Facts
	// Hops counts the chain hops whose signatures were checked again
	// (chain.go); Chain is every hop, oldest first, with what was found.
	Hops  int        `json:"chain_hops"`
	Chain []HopCheck `json:"-"`
	// Untied lists the records of a bundle exported from a store that no
	// checked hop carries: possible only when the chain has hops recorded
	// without their manifests (an import's chain policy refuses it).
	Untied []string `json:"-"`
	came   map[string]verify.Digest
	// builds is what each package's plugin was built from (BuildSummary:
	// a few short strings each), by package digest, for the report.
	builds map[verify.Digest]*BuildSummary
}

// SignatureFacts is what one provider version's checked SHA256SUMS
// signature says.
type SignatureFacts struct {
	Provider  string        `json:"-"` // dist.ProviderVersion.Key
	Namespace string        `json:"-"` // dist.NamespaceKey
	Trust     string        `json:"-"` // dist.TrustPublisher or dist.TrustSite
	Signer    verify.Signer `json:"signer"`
	Created   time.Time     `json:"created"`
	// KeyExpires is when the signing key expires by its newest
	// self-signature (nil: never); KeyExpiredSince says that it has by
	// this machine's clock (the signature was made while it was valid,
	// which is what counts; see verify.CheckSignature).
	KeyExpires      *time.Time `json:"key_expires,omitempty"`
	KeyExpiredSince bool       `json:"key_expired_since"`
}

// Facts returns the signature facts of the provider version with Key key,
// or nil (not checked: a delta's omitted SHA256SUMS).
func (r *Result) Facts(key string) *SignatureFacts {
	if r.byKey == nil || len(r.byKey) != len(r.Signed) {
		r.byKey = make(map[string]int, len(r.Signed))
		for i := range r.Signed {
			r.byKey[r.Signed[i].Provider] = i
		}
	}
	if i, ok := r.byKey[key]; ok {
		return &r.Signed[i]
	}
	return nil
}

// Trust is the trust tier of p (dist.TrustPublisher, dist.TrustSite or
// dist.TrustMirror).
func Trust(p dist.ProviderVersion) string { return p.Trust() }

// Checker checks a signed manifest against the blobs it lists, as they
// stream by: each provider version's SHA256SUMS signature against the keys
// the bundle carries for it (judged as of its creation, see
// verify.CheckSignature; a site re-signature against the manifest's signer),
// each package's filename and sha256 against that SHA256SUMS, the h1 of
// each zip, and each module's zip (what OpenTofu's oci:// sources get)
// against its archive (what the registry protocol serves): the zip is
// rebuilt from the archive with modzip.ZipFromTarGz, which is deterministic,
// and its sha256 compared with the catalog's. It is how both 'verify' and
// 'import' decide, in one place.
//
// Use: New (runs Manifest), then Add or Spool for every blob after
// the bundle reader has verified its digest, then Finish, then Close.
//
// Bounds: h1 hashes are computed by GOMAXPROCS goroutines, one zip each,
// while the stream goes on; Add blocks while they are all busy, so at most
// that many spooled zips (plus the one being added) exist at once. SHA256SUMS files
// and signatures stay on disk until Finish, which reads one provider's at a
// time (at most dist.MaxShasumsSize + MaxSignatureSize). Memory beyond that is
// proportional to the manifest (≤ MaxManifestSize): one entry per blob and
// one parsed key per distinct armored key; for a bundle with an SBOM, the
// Go build information read from its zips (at most MaxSBOMSize in all,
// checkBuildInfoTotal), which checkSBOM builds the SBOM from. Computing h1 reads a zip's
// directory (archive/zip holds it in memory: ≈ 300 bytes per entry, and a
// zip of N bytes holds at most N/46) and unpacks at most MaxZipUnpacked
// bytes of at most MaxZipEntries files (and at most MaxZipRatio times the
// zip's size, or MinZipUnpackedLimit). Rebuilding a module zip streams the
// archive through modzip (at most 1 GiB of content, 200 000 entries) into a
// hash: memory does not grow with the archive.
type Checker struct {
	m       *bundle.Manifest
	opt     Options
	spool   string
	paths   map[verify.Digest]string // SHA256SUMS and signatures received
	wantH1  map[verify.Digest]string
	wantBI  map[verify.Digest]verify.Digest // package → its build information ("" if none listed)
	infos   map[verify.Digest][]byte        // package → build information read from its zip (encoded; only with an SBOM)
	uses    map[verify.Digest]int           // package → how many entries of the catalog list it
	modules int                             // Go modules in infos, counted per entry (MaxSBOMModules)
	hashed  map[verify.Digest]bool
	wantZip map[verify.Digest]verify.Digest // module archive → its zip ("" when it has none)
	// wantDocs: documentation blobs → what the catalog says of them (a
	// provider's record, or nil for a module's).
	wantDocs map[verify.Digest]*dist.ProviderDocs
	jobs     chan h1Job
	wg       sync.WaitGroup
	mu       sync.Mutex
	err      error
	n        int
	rep      Result
	keyring  KeyringCache
	chain    *chainState // set by checkChain (Finish)
}

type h1Job struct {
	d      verify.Digest
	path   string
	remove bool
	module bool // d is a module archive: rebuild its zip
	docs   bool // d is documentation: checkDocs
}

// New runs Manifest on m and returns a Checker for its blobs.
func New(m *bundle.Manifest, opt Options) (*Checker, error) {
	if err := Manifest(m); err != nil {
		return nil, err
	}
	if opt.Now.IsZero() {
		opt.Now = timeNow()
	}
	if err := checkBundleTime(opt.SignedAt, opt.Now); err != nil {
		return nil, err
	}
	c := &Checker{m: m, opt: opt, paths: map[verify.Digest]string{}, wantH1: map[verify.Digest]string{},
		wantBI: map[verify.Digest]verify.Digest{}, infos: map[verify.Digest][]byte{},
		uses: map[verify.Digest]int{}, hashed: map[verify.Digest]bool{}, wantZip: map[verify.Digest]verify.Digest{}, keyring: KeyringCache{}}
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			c.wantH1[pk.Digest] = pk.H1
			c.wantBI[pk.Digest] = pk.BuildInfo
			c.uses[pk.Digest]++
		}
	}
	for _, mv := range m.Catalog.Modules {
		c.wantZip[mv.Archive] = mv.Zip
	}
	if err := c.collectDocs(); err != nil {
		return nil, err
	}
	// One worker per core: unpacking zips for h1 is nearly all the CPU an
	// import or verify needs (the stream itself, sha256 at ~2 GB/s, is a
	// small part), so the stream's goroutine shares a core with one.
	workers := runtime.GOMAXPROCS(0)
	c.jobs = make(chan h1Job)
	for range workers {
		c.wg.Add(1)
		go c.worker()
	}
	return c, nil
}

func (c *Checker) worker() {
	defer c.wg.Done()
	for j := range c.jobs {
		check, count, _ := c.job(j)
		err := check(j.d, j.path)
		if j.remove {
			os.Remove(j.path)
		}
		c.mu.Lock()
		c.hashed[j.d] = true
		if err == nil {
			*count++
		} else if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
}

func (c *Checker) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Add takes note of blob b, whose bytes (already verified against the
// manifest) are in the file at path until Finish returns. Packages are
// hashed in the background; Add returns the first failure found so far.
func (c *Checker) Add(b bundle.Blob, path string) error {
	return c.add(b, path, false)
}

func (c *Checker) add(b bundle.Blob, path string, remove bool) error {
	err := c.failed()
	if err == nil && c.jobs == nil {
		err = errors.New("blob added to a finished check")
	}
	if err != nil {
		if remove {
			os.Remove(path)
		}
		return err
	}
	switch b.Role {
	case dist.RoleProviderPackage:
		if c.known(b.Digest) {
			c.mu.Lock()
			c.hashed[b.Digest] = true
			c.mu.Unlock()
			if remove {
				os.Remove(path)
			}
			return nil
		}
		c.jobs <- h1Job{d: b.Digest, path: path, remove: remove}
		return nil
	case dist.RoleModuleArchive:
		c.jobs <- h1Job{d: b.Digest, path: path, remove: remove, module: true}
		return nil
	case dist.RoleProviderDocs, dist.RoleModuleDocs:
		c.jobs <- h1Job{d: b.Digest, path: path, remove: remove, docs: true}
		return nil
	case dist.RoleShasums, dist.RoleShasumsSig, dist.RoleGoBuildInfo, dist.RoleGateReport,
		dist.RoleBundleManifest, dist.RoleBundleSignature, dist.RoleBundleKey, dist.RoleApproval:
		c.paths[b.Digest] = path // read by Finish (bounded by Manifest)
	default:
		if remove {
			os.Remove(path)
		}
	}
	return nil
}

// Spool copies a blob's bytes from r (a verifying blob reader) to a file of
// its own under SpoolDir and adds it; zips and module archives are removed
// once checked, the rest by Close. For 'verify', which keeps nothing.
func (c *Checker) Spool(b bundle.Blob, r io.Reader) (int64, error) {
	if b.Role == dist.RoleModuleZip {
		return io.Copy(io.Discard, r)
	}
	if c.spool == "" {
		d, err := os.MkdirTemp(c.opt.SpoolDir, "airgap-check-")
		if err != nil {
			return 0, fmt.Errorf("spooling blobs for the consistency check: %w", err)
		}
		c.spool = d
	}
	if err := roomToSpool(c.spool, b, c.m.Describe(b.Digest)); err != nil {
		return 0, err
	}
	c.n++
	path := filepath.Join(c.spool, strconv.Itoa(c.n))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := bundle.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return n, err
	}
	return n, c.add(b, path, true)
}

// roomToSpool refuses to spool a blob larger than what is free where it
// would go: the size is the signed manifest's (the reader holds the blob to
// it), so a small bundle that states a huge, highly compressible blob
// cannot fill the disk of the transfer station before it is refused.
func roomToSpool(dir string, b bundle.Blob, what string) error {
	free, ok := bundle.FreeBytes(dir)
	if !ok || b.Size <= free {
		return nil
	}
	return fmt.Errorf("blob %s (%s) is %s, and the temporary directory %s has %s free: it cannot be checked here\nhint: point TMPDIR at a disk with room for the bundle's largest blob; a blob far larger than its bundle file is a sign of a hostile bundle",
		b.Digest.Short(), dist.Printable(what), dist.HumanSize(b.Size), filepath.Dir(dir), dist.HumanSize(free))
}

// Finish waits for the zips in hand to be hashed, then checks every provider
// version's SHA256SUMS and signature, and the h1 of zips that did not stream
// by (through Have).
func (c *Checker) Finish() (*Result, error) {
	c.stop()
	if err := c.failed(); err != nil {
		return nil, err
	}
	if err := c.checkChain(); err != nil {
		return nil, err
	}
	c.rep.came = c.chain.came
	for _, h := range c.rep.Chain {
		if h.Checked {
			c.rep.Hops++
		}
	}
	for _, p := range c.m.Catalog.Providers {
		if err := c.provider(p); err != nil {
			return nil, err
		}
	}
	if err := c.declarations(); err != nil {
		return nil, err
	}
	var rest []h1Job
	for _, d := range unchecked(c, c.wantZip) {
		rest = append(rest, h1Job{d: d, module: true})
	}
	for _, d := range unchecked(c, c.wantDocs) {
		rest = append(rest, h1Job{d: d, docs: true})
	}
	for _, d := range unchecked(c, c.wantH1) {
		if !c.known(d) {
			rest = append(rest, h1Job{d: d})
		}
	}
	for _, j := range rest {
		check, count, what := c.job(j)
		path, ok := c.have(j.d)
		if !ok {
			c.rep.Deferred = append(c.rep.Deferred, what+c.m.Describe(j.d))
			continue
		}
		if err := check(j.d, path); err != nil {
			return nil, err
		}
		*count++
	}
	if err := c.checkReports(); err != nil {
		return nil, err
	}
	if err := c.checkSBOM(); err != nil {
		return nil, err
	}
	rep := c.rep
	return &rep, nil
}

// known reports whether the caller already checked the package zip d
// (Options.Known).
func (c *Checker) known(d verify.Digest) bool {
	return c.opt.Known != nil && c.opt.Known(d, c.wantH1[d], c.wantBI[d])
}

// job returns the check for j, its counter in the report, and what it
// checks (for the list of deferred checks).
func (c *Checker) job(j h1Job) (check func(verify.Digest, string) error, count *int, what string) {
	if j.module {
		return c.checkModule, &c.rep.ModuleTrees, "names and zip of "
	}
	if j.docs {
		return c.checkDocs, &c.rep.Docs, "form of "
	}
	return c.checkH1, &c.rep.H1, "h1 of "
}

// unchecked lists, sorted, the digests in want no job has checked.
func unchecked[V any](c *Checker, want map[verify.Digest]V) []verify.Digest {
	var rest []verify.Digest
	for d := range want {
		if !c.hashed[d] {
			rest = append(rest, d)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
	return rest
}

func (c *Checker) stop() {
	if c.jobs != nil {
		close(c.jobs)
		c.wg.Wait()
		c.jobs = nil
	}
}

// Close stops the hashing and removes what Spool wrote.
func (c *Checker) Close() {
	c.stop()
	if c.spool != "" {
		os.RemoveAll(c.spool)
	}
}

func (c *Checker) have(d verify.Digest) (string, bool) {
	if p, ok := c.paths[d]; ok {
		return p, true
	}
	if c.opt.Have != nil {
		return c.opt.Have(d)
	}
	return "", false
}

// provider checks one provider version's SHA256SUMS signature and lines.
func (c *Checker) provider(p dist.ProviderVersion) error {
	entry := "provider " + p.String()
	sumsPath, ok1 := c.have(p.Shasums)
	sigPath, ok2 := c.have(p.ShasumsSig)
	if !ok1 || !ok2 {
		c.rep.Deferred = append(c.rep.Deferred, "SHA256SUMS and signature of "+entry)
		return nil
	}
	sums, err := readLimited(sumsPath, dist.MaxShasumsSize)
	if err != nil {
		return fmt.Errorf("%s: reading its SHA256SUMS: %w", entry, err)
	}
	sig, err := readLimited(sigPath, bundle.MaxSignatureSize)
	if err != nil {
		return fmt.Errorf("%s: reading its SHA256SUMS signature: %w", entry, err)
	}
	checked, err := c.checkProviderSignature(p, sums, sig)
	if err != nil {
		return inconsistent(entry, "%v", err)
	}
	if err := checkSumsTime(entry, checked.Created, c.opt.SignedAt, c.opt.Now, c.m.Created != nil); err != nil {
		return err
	}
	c.rep.Signatures++
	c.rep.Signed = append(c.rep.Signed, facts(p, checked, c.opt.Now))
	lines, _, err := dist.ParseShasums(bytes.NewReader(sums))
	if err != nil {
		return inconsistent(entry, "its SHA256SUMS is unreadable: %v", err)
	}
	listed := make(map[string]string, len(lines))
	for _, l := range lines {
		if prev, ok := listed[l.Filename]; ok && prev != l.Hex {
			return inconsistent(entry, "its SHA256SUMS lists %s twice, with different hashes", l.Filename)
		}
		listed[l.Filename] = l.Hex
	}
	if p.MirrorHashesOnly && len(listed) != len(p.Packages) {
		// The site wrote this SHA256SUMS of what it carried: a line for a
		// package it did not carry would vouch for bytes nobody hashed.
		return inconsistent(entry, "marked as carrying mirror hashes only, but its SHA256SUMS lists %d files for %d packages", len(listed), len(p.Packages))
	}
	for _, pk := range p.Packages {
		// The name every registry gives this package (Manifest has
		// required pk.Filename to be it): the signed line must be for this
		// type, version and platform.
		name := dist.ProviderPackageName(p.Type, p.Version, pk.OS, pk.Arch)
		h, ok := listed[name]
		switch {
		case !ok:
			return inconsistent(entry+" "+pk.Platform(), "the package %s is not listed in its signed SHA256SUMS", name)
		case h != pk.Digest.Hex():
			return inconsistent(entry+" "+pk.Platform(), "the package %s has sha256 %s, but its signed SHA256SUMS says %s", pk.Filename, pk.Digest.Hex(), h)
		}
		c.rep.Packages++
		if p.MirrorHashesOnly {
			c.rep.MirrorHashesOnly++
		}
	}
	return nil
}

// facts is what p's checked signature says, for the report.
func facts(p dist.ProviderVersion, c verify.Checked, now time.Time) SignatureFacts {
	f := SignatureFacts{Provider: p.Key(), Namespace: p.NamespaceKey(), Trust: Trust(p), Signer: c.Signer, Created: c.Created.UTC()}
	if !c.KeyExpires.IsZero() {
		e := c.KeyExpires.UTC()
		f.KeyExpires, f.KeyExpiredSince = &e, c.ExpiredSince(now)
	}
	return f
}

// declarations checks that every publisher key the manifest declares new
// is needed by a provider the bundle carries: one of its namespace whose
// SHA256SUMS that key signed. A declaration whose namespace has providers
// whose signatures are not checked here (a delta's omitted SHA256SUMS) is
// left for import.
func (c *Checker) declarations() error {
	if len(c.m.PublisherKeys) == 0 {
		return nil
	}
	signs := map[string]bool{}    // namespace + " " + fingerprint of a checked provider
	deferred := map[string]bool{} // namespaces with a provider not checked here
	for _, p := range c.m.Catalog.Providers {
		if f := c.rep.Facts(p.Key()); f == nil {
			deferred[p.NamespaceKey()] = true
		} else {
			signs[f.Namespace+" "+f.Signer.Fingerprint] = true
		}
	}
	for _, d := range c.m.PublisherKeys {
		switch {
		case signs[d.Namespace+" "+d.Fingerprint]:
		case deferred[d.Namespace]:
			c.rep.Deferred = append(c.rep.Deferred, "publisher key declaration "+d.Fingerprint+" for "+d.Namespace)
		default:
			return inconsistent("publisher key declaration for "+d.Namespace, "it approves key %s, but no provider of that namespace in the bundle is signed by it: "+
				"a bundle may approve a new key only for providers it carries", d.Fingerprint)
		}
	}
	return nil
}

// checkProviderSignature checks sig over sums against the keys p carries;
// a site re-signature must be by the manifest's signer.
func (c *Checker) checkProviderSignature(p dist.ProviderVersion, sums, sig []byte) (verify.Checked, error) {
	kr, err := c.keys(p)
	if err != nil {
		return verify.Checked{}, err
	}
	checked, err := verify.CheckSignature(kr, bytes.NewReader(sums), sig)
	if err != nil {
		return checked, fmt.Errorf("its SHA256SUMS signature does not verify against the keys the bundle carries for it: %w", err)
	}
	if (p.SiteSigned || p.MirrorHashesOnly) && !c.mayResign(p, checked.Signer.Fingerprint) {
		if len(c.m.Chain) > 0 {
			return checked, fmt.Errorf("marked as %s, but its SHA256SUMS is signed by %s, not by the signer of a hop of its chain whose signed manifest carries this record (a bundle exported from a store re-signs nothing)", dist.TrustLabel(p.Trust()), checked.Signer)
		}
		return checked, fmt.Errorf("marked as %s, but its SHA256SUMS is signed by %s, not by the key that signed the bundle (%s)", dist.TrustLabel(p.Trust()), checked.Signer, c.opt.Signer)
	}
	if !p.SiteSigned && !p.MirrorHashesOnly && c.isSiteKey(checked.Signer.Fingerprint) {
		return checked, fmt.Errorf("its SHA256SUMS is signed by %s, a key trusted to sign bundles, but it is not marked as re-signed by the site: a site key is never a publisher key", checked.Signer)
	}
	return checked, nil
}

// isSiteKey reports whether fp is the bundle signer's fingerprint, that of
// a key in SiteKeys, or that of a hop signer of its chain (a key that signs
// bundles is never a publisher key).
func (c *Checker) isSiteKey(fp string) bool {
	if fp == "" {
		return false
	}
	if strings.EqualFold(fp, c.opt.Signer.Fingerprint) || c.chain != nil && c.chain.signers[strings.ToUpper(fp)] {
		return true
	}
	for _, e := range c.opt.SiteKeys {
		if strings.EqualFold(fp, verify.Fingerprint(e)) {
			return true
		}
	}
	return false
}

// keys parses the signing keys a provider version carries (each distinct
// set once).
func (c *Checker) keys(p dist.ProviderVersion) (openpgp.EntityList, error) {
	return c.keyring.Keyring(p)
}

// KeyringCache holds the parsed signing keys of provider versions by their
// set of armored keys: every version of a provider carries the same keys,
// and parsing them is what costs. Not safe for concurrent use.
type KeyringCache map[string]openpgp.EntityList

// Keyring is ProviderKeyring(p), parsed once per distinct set of keys.
func (kc KeyringCache) Keyring(p dist.ProviderVersion) (openpgp.EntityList, error) {
	var id strings.Builder
	for _, k := range p.SigningKeys {
		id.WriteString(k.ASCIIArmor)
		id.WriteByte(0)
	}
	if kr, ok := kc[id.String()]; ok {
		return kr, nil
	}
	kr, err := ProviderKeyring(p)
	if err != nil {
		return nil, err
	}
	kc[id.String()] = kr
	return kr, nil
}

// ProviderKeyring parses the signing keys p carries.
func ProviderKeyring(p dist.ProviderVersion) (openpgp.EntityList, error) {
	var kr openpgp.EntityList
	for _, k := range p.SigningKeys {
		el, err := verify.ReadKeyring(strings.NewReader(k.ASCIIArmor))
		if err != nil {
			return nil, fmt.Errorf("its signing key %q is unreadable: %w", k.KeyID, err)
		}
		kr = append(kr, el...)
	}
	return kr, nil
}

// ProviderSignature checks a provider version's SHA256SUMS signature
// (the bytes of its two blobs) against the keys it carries, as of the
// signature's creation. For reports on what is already in a store.
func ProviderSignature(p dist.ProviderVersion, sums, sig []byte) (verify.Checked, error) {
	kr, err := ProviderKeyring(p)
	if err != nil {
		return verify.Checked{}, err
	}
	return verify.CheckSignature(kr, bytes.NewReader(sums), sig)
}

// checkH1 computes the h1 of the zip at path and, in the same pass, the Go
// build information of its plugin (ScanPackage), and compares both with
// what the catalog says for every package with digest d.
func (c *Checker) checkH1(d verify.Digest, path string) error {
	want := c.wantH1[d]
	got, info, err := ScanPackage(path)
	if err != nil {
		return inconsistent(c.m.Describe(d), "package %s is not a usable provider zip: %v", d.Short(), err)
	}
	if got != want {
		return inconsistent(c.m.Describe(d), "the catalog says h1 %s, but the package hashes to %s", want, got)
	}
	doc := goinfo.Encode(info)
	if wantBI := c.wantBI[d]; wantBI != "" {
		if bi := verify.DigestBytes(doc); bi != wantBI {
			return inconsistent(c.m.Describe(d), "the catalog gives it the Go build information %s, but its plugin's is %s: the SBOM would not describe what it carries",
				wantBI.Short(), bi.Short())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wantBI[d] != "" {
		c.rep.BuildInfo++
		if info.None != "" {
			c.rep.BuildInfoNone++
		}
	}
	c.rep.noteBuild(d, info)
	if c.m.SBOM == "" {
		return nil
	}
	// Kept for checkSBOM: at most MaxSBOMSize in all (checkBuildInfoTotal),
	// and refused here, while the stream goes on, once they list more
	// modules than checkSBOM would build (MaxSBOMModules).
	c.infos[d] = doc
	if c.modules += (info.Modules() + 1) * c.uses[d]; c.modules > MaxSBOMModules {
		return tooManyModules()
	}
	return nil
}

// checkModule checks the module archive at path (digest d): its names
// (moduleNames), then, where the catalog gives it a zip, that zip.
func (c *Checker) checkModule(d verify.Digest, path string) error {
	if err := moduleNames(path); err != nil {
		return inconsistent(c.m.Describe(d), "%v", err)
	}
	if c.wantZip[d] == "" {
		return nil
	}
	if err := c.checkModuleZip(d, path); err != nil {
		return err
	}
	c.mu.Lock()
	c.rep.ModuleZips++
	c.mu.Unlock()
	return nil
}

// moduleNames refuses a module archive with a name that is not the same
// file on Linux, macOS and Windows, or is one with another of its names
// there (package portable): export refuses them in every source it
// fetches, and the transfer station refuses them in bundles an older or
// hostile exporter made. It streams the archive's headers (memory:
// portable.Set's, at most about 30 MiB at the archive limits).
func moduleNames(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("its archive is unreadable: %v", err)
	}
	tr := tar.NewReader(gz)
	names := portable.NewSet()
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("its archive is unreadable: %v", err)
		}
		if name := strings.TrimSuffix(h.Name, "/"); name != "" {
			if err := names.Add(name); err != nil {
				return fmt.Errorf("its archive holds %v", err)
			}
		}
	}
}

// checkModuleZip rebuilds the zip of the module archive at path (digest d)
// and compares its sha256 with the catalog's zip for that archive.
func (c *Checker) checkModuleZip(d verify.Digest, path string) error {
	want := c.wantZip[d]
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := verify.NewDigester()
	if err := modzip.ZipFromTarGz(f, h); err != nil {
		return inconsistent(c.m.Describe(d), "its archive %s cannot be turned into a zip: %v", d.Short(), err)
	}
	if got := h.Digest(); got != want {
		return inconsistent(c.m.Describe(d), "the catalog gives it the zip %s, but its archive %s makes the zip %s: "+
			"OpenTofu's oci:// sources would get other files than the registry protocol serves", want.Short(), d.Short(), got.Short())
	}
	return nil
}

// ScanPackage is the h1 of a provider zip (dist.H1) and the Go build
// information of its plugin, read in one pass (goinfo.ScanZip), within the
// bounds MaxZipEntries, MaxZipDirectory, MaxZipUnpacked and MaxZipRatio.
// Export (for packages a publisher signed and for those only a mirror's
// hashes vouch for) and the consistency check use it.
func ScanPackage(path string) (h1 string, info *goinfo.Info, err error) {
	if err := checkZipLimits(path); err != nil {
		return "", nil, err
	}
	return goinfo.ScanZip(path)
}

// checkZipLimits refuses a zip over the bounds MaxZipEntries,
// MaxZipDirectory, MaxZipUnpacked and MaxZipRatio before it is unpacked.
func checkZipLimits(path string) error {
	size, err := checkZipDirectory(path)
	if err != nil {
		return err
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	var total uint64
	n := len(zr.File)
	for _, f := range zr.File {
		total += f.UncompressedSize64
	}
	zr.Close()
	if n > MaxZipEntries {
		return fmt.Errorf("%d files, over the limit of %d", n, MaxZipEntries)
	}
	if total > MaxZipUnpacked {
		return fmt.Errorf("%d bytes unpacked, over the limit of %d", total, uint64(MaxZipUnpacked))
	}
	if limit := max(uint64(size)*MaxZipRatio, MinZipUnpackedLimit); total > limit {
		return fmt.Errorf("%d bytes unpacked from %d packed, over the limit of %d× (or %d bytes)", total, size, MaxZipRatio, MinZipUnpackedLimit)
	}
	return nil
}

// checkZipDirectory refuses a zip whose central directory holds more than
// MaxZipEntries entries or MaxZipDirectory bytes, however its end record
// counts them, before archive/zip reads the directory into memory (it
// accepts as many as the file's size allows, and offers no limit). It
// returns the zip's size.
func checkZipDirectory(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), zipdir.Check(f, fi.Size(), MaxZipEntries, MaxZipDirectory)
}

// readLimited reads a small file of the bundle (dist.ReadFileLimit).
func readLimited(path string, limit int64) ([]byte, error) { return dist.ReadFileLimit(path, limit) }

// TightGC sets the collector of a process that checks a bundle ('verify',
// 'import') to GOGC=50, unless GOGC is set in its environment. Their live
// heap is small and steady (the manifest, read-ahead and inflate buffers,
// build information), and at the default of 100 the heap grew to twice
// it: a 10 GiB bundle of 60 AWS-sized packages peaked at 67 MiB resident
// for verify, 57 MiB at 50, in the same time (15 collections in 76 s).
func TightGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}

// All reads every blob of br through a Checker that spools what it needs
// under spoolDir and removes it again: what 'verify' does at the transfer
// station, keeping nothing. It returns the report and the blobs and bytes
// read. The checks that need the store (a delta's omitted blobs) are listed
// as deferred.
func All(br *bundle.Reader, spoolDir string) (rep *Result, blobs int, bytes int64, err error) {
	return AllWith(br, Options{SpoolDir: spoolDir})
}

// AllWith is All with opt (its Signer, SiteKeys and SignedAt are
// the reader's).
func AllWith(br *bundle.Reader, opt Options) (rep *Result, blobs int, bytes int64, err error) {
	opt.Signer, opt.SiteKeys, opt.SignedAt = br.Signer(), br.Keyring(), br.SignedAt()
	c, err := New(br.Manifest(), opt)
	if err != nil {
		return nil, 0, 0, err
	}
	defer c.Close()
	for {
		b, rd, err := br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, blobs, bytes, err
		}
		n, err := c.Spool(b, rd)
		bytes += n
		if err != nil {
			return nil, blobs, bytes, err
		}
		blobs++
	}
	rep, err = c.Finish()
	return rep, blobs, bytes, err
}

// Summary is the report as indented lines for a terminal ("" for nil).
func (r *Result) Summary(indent string) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%sconsistent: %d SHA256SUMS signatures verified against the carried keys, %d packages found in them, %d h1 hashes recomputed, %d module archives' names checked, %d module zips rebuilt\n",
		indent, r.Signatures, r.Packages, r.H1, r.ModuleTrees, r.ModuleZips)
	if r.MirrorHashesOnly > 0 {
		fmt.Fprintf(&b, "%sof those packages, %d carry a network mirror's hashes only (no publisher signature; 'import --require-publisher-signatures' refuses them)\n", indent, r.MirrorHashesOnly)
	}
	switch {
	case r.BuildInfo > 0 && r.BuildInfoNone == r.BuildInfo:
		fmt.Fprintf(&b, "%s            %d plugins read again: none of them has Go build information (see Build information), %d gate reports' findings counted again\n", indent, r.BuildInfo, r.Reports)
	case r.BuildInfo > 0 || r.Reports > 0:
		fmt.Fprintf(&b, "%s            %d Go build information documents read again from the plugins (%d of them say there is none), %d gate reports' findings counted again\n", indent, r.BuildInfo, r.BuildInfoNone, r.Reports)
	}
	if len(r.Deferred) > 0 {
		fmt.Fprintf(&b, "%sleft for import (their blobs are not in this delta): %d checks\n", indent, len(r.Deferred))
	}
	return b.String()
}
