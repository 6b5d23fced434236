package check

import (
	"fmt"
	"strings"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/verify"
)

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
