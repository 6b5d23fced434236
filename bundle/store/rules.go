package store

import (
	"fmt"
	"sort"
	"strings"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// CatalogRules are the rules every import runs before the site's policies
// (and a forecast with them): a bundle or chain hop signed by a key the
// store has revoked is refused (ErrRevokedKey, judgeSignature); a version the store withdrew is refused
// unless the bundle reinstates it (ErrWithdrawn), and so is a version the
// store serves with other content (ErrConflict: a version never changes;
// a bundle may only add platforms to it).
func CatalogRules() []Policy {
	return []Policy{PolicyFunc(revokedSignersRule), PolicyFunc(withdrawnRule), PolicyFunc(conflictRule)}
}

// conflictRule refuses each version of the bundle that the store serves
// with other content (dist.Catalog.CheckMerge, version by version).
func conflictRule(in *PolicyInput, out *PolicyResult) error {
	m := in.Manifest
	provs, mods := versionMaps(&in.Index.Catalog)
	var rs []Refusal
	var lines []string
	add := func(r Refusal, err error) {
		if err == nil {
			return
		}
		r.Reason = err.Error()
		rs = append(rs, r)
		if len(lines) < maxListed {
			lines = append(lines, dist.Printable(err.Error()))
		}
	}
	for _, p := range m.Catalog.Providers {
		if old := provs[p.Key()]; old != nil {
			add(providerRefusal(ruleConflict, p, ""), (&dist.Catalog{Providers: []dist.ProviderVersion{*old}}).CheckMerge(&dist.Catalog{Providers: []dist.ProviderVersion{p}}))
		}
	}
	for _, mv := range m.Catalog.Modules {
		if old := mods[mv.Key()]; old != nil {
			add(moduleRefusal(ruleConflict, mv, ""), (&dist.Catalog{Modules: []dist.ModuleVersion{*old}}).CheckMerge(&dist.Catalog{Modules: []dist.ModuleVersion{mv}}))
		}
	}
	rels := map[string]*dist.CLIRelease{}
	for i := range in.Index.Catalog.Releases {
		rels[in.Index.Catalog.Releases[i].ReleaseKey()] = &in.Index.Catalog.Releases[i]
	}
	for _, r := range m.Catalog.Releases {
		if old := rels[r.ReleaseKey()]; old != nil {
			add(releaseRefusal(ruleConflict, r, ""), (&dist.Catalog{Releases: []dist.CLIRelease{*old}}).CheckMerge(&dist.Catalog{Releases: []dist.CLIRelease{r}}))
		}
	}
	if len(rs) == 0 {
		return nil
	}
	if n := len(rs) - len(lines); n > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more", n))
	}
	out.Refuse(fmt.Errorf("%w: %s\nhint: a store never changes what it serves under a name and version; "+
		"if the bundle is right, the store holds something else under that name (check 'airgap inventory')", ErrConflict, strings.Join(lines, "\n  ")), rs...)
	return nil
}

// versionMaps indexes a catalog's provider and module versions by Key.
func versionMaps(cat *dist.Catalog) (map[string]*dist.ProviderVersion, map[string]*dist.ModuleVersion) {
	provs := make(map[string]*dist.ProviderVersion, len(cat.Providers))
	for i := range cat.Providers {
		provs[cat.Providers[i].Key()] = &cat.Providers[i]
	}
	mods := make(map[string]*dist.ModuleVersion, len(cat.Modules))
	for i := range cat.Modules {
		mods[cat.Modules[i].Key()] = &cat.Modules[i]
	}
	return provs, mods
}

// releaseRefusal is a Refusal of a CLI release.
func releaseRefusal(rule string, r dist.CLIRelease, reason string) Refusal {
	return Refusal{Rule: rule, Kind: "release", Address: r.Product, Version: r.Version, Reason: reason}
}

// releasePinned is the pins file's decision on release r, for import's
// rule and verify's review alike: governed when the file lists r's
// product, and then why it refuses r ("" when it lists r's key).
func releasePinned(pins *PinsFile, r dist.CLIRelease) (governed bool, why string) {
	governed, allowed := pins.AllowsRelease(r.Product, r.KeyFingerprint)
	if !governed || allowed {
		return governed, ""
	}
	var want []string
	for _, k := range pins.Releases[r.Product] {
		want = append(want, verify.GroupFingerprint(k))
	}
	return true, fmt.Sprintf("signed by key %s, which the pins file %s does not list for %s releases (it lists %s)",
		verify.GroupFingerprint(r.KeyFingerprint), pins.Path, r.Product, strings.Join(want, ", "))
}

// releaseKeysRule refuses a CLI release signed by a key the store does not
// take for its product: the store takes the keys of the product's releases
// it holds; a new one when the site accepts it (--accept-publisher-key,
// accept: normalized fingerprints) or a station's valid approval of this
// bundle names it (under dist.ReleaseKeyNamespace); and a product's first
// key by its first use, as airgap's pin or the export manifest's checked
// it — except, in a store that takes new keys only from the station
// (stationOnly), a first key that airgap does not pin itself. A pins file
// that lists the product decides instead (PinsFile.AllowsRelease): its
// keys and no other.
func releaseKeysRule(accept []string, approvals *Approvals, stationOnly bool, pins *PinsFile) Policy {
	return PolicyFunc(func(in *PolicyInput, out *PolicyResult) error {
		held := map[string]map[string]bool{}
		for _, r := range in.Index.Catalog.Releases {
			if held[r.Product] == nil {
				held[r.Product] = map[string]bool{}
			}
			held[r.Product][r.KeyFingerprint] = true
		}
		ok := map[string]bool{}
		for _, a := range accept {
			if fp, err := verify.ParseFingerprint(a); err == nil {
				ok[fp] = true
			}
		}
		station := map[string]bool{} // namespace + " " + fingerprint
		if approvals != nil {
			for _, k := range approvals.PublisherKeys() {
				station[k.Namespace+" "+k.Fingerprint] = true
			}
		}
		var rs, pinRs []Refusal
		var lines, pinLines []string
		for _, r := range in.Manifest.Catalog.Releases {
			if governed, why := releasePinned(pins, r); governed {
				if why != "" {
					pinRs = append(pinRs, releaseRefusal(RulePublisherKey, r, why))
					if len(pinLines) < maxListed {
						pinLines = append(pinLines, dist.Printable("release "+r.String()+": "+why))
					}
				}
				continue
			}
			keys := held[r.Product]
			first := len(keys) == 0 && (!stationOnly || r.KeyPin == dist.KeyPinDefault)
			if keys[r.KeyFingerprint] || ok[r.KeyFingerprint] || station[dist.ReleaseKeyNamespace(r.Product)+" "+r.KeyFingerprint] || first {
				continue
			}
			var had []string
			for k := range keys {
				had = append(had, verify.GroupFingerprint(k))
			}
			sort.Strings(had)
			why := fmt.Sprintf("signed by key %s, which the export manifest pinned; the store takes a product's first key only from the transfer station", verify.GroupFingerprint(r.KeyFingerprint))
			if len(had) > 0 {
				why = fmt.Sprintf("signed by key %s; the store's %s releases are signed by %s", verify.GroupFingerprint(r.KeyFingerprint), r.Product, strings.Join(had, ", "))
			}
			rs = append(rs, releaseRefusal(RulePublisherKey, r, why))
			if len(lines) < maxListed {
				lines = append(lines, dist.Printable("release "+r.String()+": "+why))
			}
		}
		if len(pinRs) > 0 {
			out.Refuse(fmt.Errorf("%w: a CLI release signed by a key the pins file does not list:\n  %s\nhint: the pins file is the site's policy: if the publisher changed its key (check its announcement, not the bundle), add the new fingerprint to its release block",
				ErrPublisherKey, strings.Join(pinLines, "\n  ")), pinRs...)
		}
		if len(rs) == 0 {
			return nil
		}
		hint := "if the publisher changed its key (check its announcement, not the bundle), import with --accept-publisher-key FINGERPRINT"
		if stationOnly {
			hint = "if the publisher changed its key (check its announcement, not the bundle), approve it at the transfer station: airgap approve --key STATION.key.asc --accept-publisher-key FINGERPRINT … BUNDLE"
		}
		out.Refuse(fmt.Errorf("%w: a new publisher key for CLI releases:\n  %s\nhint: %s", ErrPublisherKey, strings.Join(lines, "\n  "), hint), rs...)
		return nil
	})
}
