package protocol

import (
	"sort"
	"strings"

	"github.com/airgap/airgap/dist"
)

// view is an index over one catalog snapshot, built once per snapshot.
type view struct {
	cat     *dist.Catalog
	origins []string // in default-view priority order
	// per origin: "ns/type" -> versions (ascending)
	providers map[string]map[string][]*dist.ProviderVersion
	// per origin: lower("ns/name/system") -> versions (ascending)
	modules map[string]map[string][]*dist.ModuleVersion
}

const defaultOrigin = "" // the key of the merged default view

func newView(cat *dist.Catalog) *view {
	v := &view{
		cat:       cat,
		providers: map[string]map[string][]*dist.ProviderVersion{},
		modules:   map[string]map[string][]*dist.ModuleVersion{},
	}
	seen := map[string]bool{}
	for i := range cat.Providers {
		p := &cat.Providers[i]
		m := v.providers[p.Host]
		if m == nil {
			m = map[string][]*dist.ProviderVersion{}
			v.providers[p.Host] = m
		}
		k := p.Namespace + "/" + p.Type
		m[k] = append(m[k], p)
		seen[p.Host] = true
	}
	for i := range cat.Modules {
		mv := &cat.Modules[i]
		m := v.modules[mv.Host]
		if m == nil {
			m = map[string][]*dist.ModuleVersion{}
			v.modules[mv.Host] = m
		}
		k := strings.ToLower(mv.Namespace + "/" + mv.Name + "/" + mv.System)
		m[k] = append(m[k], mv)
		seen[mv.Host] = true
	}
	for o := range seen {
		v.origins = append(v.origins, o)
	}
	sort.Slice(v.origins, func(i, j int) bool {
		return originRank(v.origins[i]) < originRank(v.origins[j]) ||
			originRank(v.origins[i]) == originRank(v.origins[j]) && v.origins[i] < v.origins[j]
	})
	return v
}

func originRank(o string) int {
	switch o {
	case "registry.terraform.io":
		return 0
	case "registry.opentofu.org":
		return 1
	}
	return 2
}

// providerVersions returns the versions of ns/type that origin serves; for
// the default view, those of the first origin that has it.
func (v *view) providerVersions(origin, ns, typ string) []*dist.ProviderVersion {
	k := strings.ToLower(ns) + "/" + strings.ToLower(typ)
	if origin != defaultOrigin {
		return v.providers[origin][k]
	}
	for _, o := range v.origins {
		if vs := v.providers[o][k]; len(vs) > 0 {
			return vs
		}
	}
	return nil
}

func (v *view) moduleVersions(origin, ns, name, system string) []*dist.ModuleVersion {
	k := strings.ToLower(ns + "/" + name + "/" + system)
	if origin != defaultOrigin {
		return v.modules[origin][k]
	}
	for _, o := range v.origins {
		if vs := v.modules[o][k]; len(vs) > 0 {
			return vs
		}
	}
	return nil
}

// hostOrigin returns the origin a Host header names (case-insensitively,
// with or without a port), or defaultOrigin. It neither allocates nor
// copies, whatever the Host's length.
func (v *view) hostOrigin(host string) string {
	for _, o := range v.origins {
		if len(host) == len(o) && strings.EqualFold(host, o) {
			return o
		}
	}
	if h, _, ok := strings.Cut(host, ":"); ok {
		for _, o := range v.origins {
			if len(h) == len(o) && strings.EqualFold(h, o) {
				return o
			}
		}
	}
	return defaultOrigin
}
