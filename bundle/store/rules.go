package store

import (
	"fmt"
	"strings"

	"github.com/airgap/airgap/dist"
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
